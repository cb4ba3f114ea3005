/**
 * The coordinator: the groups of ranks (embedded, or worker processes with their membership, group
 * formation and placement) and the step scheduler that batches client requests into steps.
 */
@NullMarked
package moe.a2a.control.cluster;

import org.jspecify.annotations.NullMarked;
