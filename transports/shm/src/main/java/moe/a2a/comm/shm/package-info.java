/**
 * Shared-memory transport: the ranks of a group are processes of one host, and rows move through
 * files under {@code /dev/shm} that every rank maps ({@link moe.a2a.comm.shm.ShmCommunicator}).
 */
@NullMarked
package moe.a2a.comm.shm;

import org.jspecify.annotations.NullMarked;
