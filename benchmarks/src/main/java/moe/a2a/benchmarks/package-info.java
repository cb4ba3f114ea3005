/**
 * JMH microbenchmarks of the data plane's hot path: layout, dispatch and combine on one rank, bf16
 * reduction, the row kernels, and the host's memory-bandwidth baseline.
 */
@NullMarked
package moe.a2a.benchmarks;

import org.jspecify.annotations.NullMarked;
