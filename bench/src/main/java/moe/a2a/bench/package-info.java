/**
 * The benchmark harness: one rank's timed run of a canonical workload at each scope, collective
 * cases, the expert stage, the reports and the bench's task messages.
 */
@NullMarked
package moe.a2a.bench;

import org.jspecify.annotations.NullMarked;
