/** The embedded group of ranks and the step scheduler that batches client requests into steps. */
@NullMarked
package moe.a2a.control.cluster;

import org.jspecify.annotations.NullMarked;
