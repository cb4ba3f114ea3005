/**
 * JMH microbenchmarks of the data plane's hot path: layout, dispatch and combine on one rank, bf16
 * reduction.
 */
@NullMarked
package moe.a2a.benchmarks;

import org.jspecify.annotations.NullMarked;
