/**
 * The canonical workloads (decode, prefill, their skewed forms): shapes and seeded routing, shared
 * by the bench, the JMH benchmarks and the GPU machine check.
 */
@NullMarked
package moe.a2a.workload;

import org.jspecify.annotations.NullMarked;
