/**
 * The NCCL transport: {@link moe.a2a.comm.nccl.NcclCommunicator} runs the {@link
 * moe.a2a.comm.Communicator} collectives as grouped {@code ncclSend}/{@code ncclRecv} on a
 * dedicated CUDA stream, with counts exchanged first and a watchdog that turns a dead peer into an
 * exception. The NCCL and CUDA calls sit behind {@link moe.a2a.comm.nccl.NcclBackend}.
 */
@NullMarked
package moe.a2a.comm.nccl;

import org.jspecify.annotations.NullMarked;
