/**
 * The data-plane communicator SPI: counts and rows exchanged all-to-all among the ranks of one
 * group.
 */
@NullMarked
package moe.a2a.comm;

import org.jspecify.annotations.NullMarked;
