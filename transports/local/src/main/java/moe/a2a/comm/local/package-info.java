/** In-process transport: the ranks of a group are threads of one JVM. */
@NullMarked
package moe.a2a.comm.local;

import org.jspecify.annotations.NullMarked;
