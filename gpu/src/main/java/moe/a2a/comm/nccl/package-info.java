/**
 * The NCCL transport: {@link moe.a2a.comm.nccl.NcclCommunicator} runs the {@link
 * moe.a2a.comm.Communicator} all-to-alls and point-to-point messages as grouped {@code
 * ncclSend}/{@code ncclRecv} (all-to-all-v with counts exchanged first), and all-reduce,
 * all-gather, reduce-scatter and broadcast as NCCL's own calls, on a dedicated CUDA stream, with a
 * watchdog that turns a dead peer into an exception. The NCCL and CUDA calls sit behind {@link
 * moe.a2a.comm.nccl.NcclBackend}.
 */
@NullMarked
package moe.a2a.comm.nccl;

import org.jspecify.annotations.NullMarked;
