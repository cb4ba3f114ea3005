/**
 * The bench as rank tasks: the handlers every rank runs, and the coordinator's client that has the
 * serving group run them.
 */
@NullMarked
package moe.a2a.bench.task;

import org.jspecify.annotations.NullMarked;
