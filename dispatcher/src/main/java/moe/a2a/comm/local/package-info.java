/** In-process transport: the ranks of a group are threads of one JVM. */
package moe.a2a.comm.local;
