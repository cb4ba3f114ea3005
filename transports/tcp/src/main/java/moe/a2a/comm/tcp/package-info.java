/** TCP transport on Netty: ranks are processes, one connection per pair of ranks. */
@NullMarked
package moe.a2a.comm.tcp;

import org.jspecify.annotations.NullMarked;
