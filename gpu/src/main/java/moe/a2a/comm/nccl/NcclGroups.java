package moe.a2a.comm.nccl;

import static org.bytedeco.cuda.global.nccl.ncclGroupEnd;
import static org.bytedeco.cuda.global.nccl.ncclGroupStart;
import static org.bytedeco.cuda.global.nccl.ncclRecv;
import static org.bytedeco.cuda.global.nccl.ncclSend;
import static org.bytedeco.cuda.global.nccl.ncclSuccess;
import static org.bytedeco.cuda.global.nccl.ncclUint8;

import moe.a2a.gpu.CudaMemory;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.nccl.ncclComm;

/**
 * The NCCL groups of {@code ncclSend}/{@code ncclRecv} that {@link CudaNcclBackend} launches: the
 * all-to-all-v (a send to and a receive from every peer with bytes to move) and a point-to-point
 * exchange. A call that fails inside a group still ends it; each returns its {@code ncclResult_t}.
 */
final class NcclGroups {
    private NcclGroups() {}

    /**
     * One NCCL group: a send to and a receive from every peer with bytes to move (self included).
     */
    static int allToAllV(
            ncclComm comm,
            CUstream_st stream,
            CudaMemory send,
            long[] sendOffsets,
            long[] sendBytes,
            CudaMemory recv,
            long[] recvOffsets,
            long[] recvBytes) {
        int result = ncclGroupStart();
        if (result != ncclSuccess) {
            return result;
        }
        for (int p = 0; p < sendBytes.length; p++) {
            if (sendBytes[p] > 0) {
                result =
                        ncclSend(send.at(sendOffsets[p]), sendBytes[p], ncclUint8, p, comm, stream);
                if (NcclResults.isError(result)) {
                    ncclGroupEnd();
                    return result;
                }
            }
            if (recvBytes[p] > 0) {
                result =
                        ncclRecv(recv.at(recvOffsets[p]), recvBytes[p], ncclUint8, p, comm, stream);
                if (NcclResults.isError(result)) {
                    ncclGroupEnd();
                    return result;
                }
            }
        }
        return ncclGroupEnd();
    }

    /** One NCCL group: {@code out} bytes to {@code to} and {@code in} bytes from {@code from}. */
    static int sendRecv(
            ncclComm comm,
            CUstream_st stream,
            CudaMemory send,
            long out,
            int to,
            CudaMemory recv,
            long in,
            int from) {
        int result = ncclGroupStart();
        if (result != ncclSuccess) {
            return result;
        }
        if (out > 0) {
            result = ncclSend(send.at(0), out, ncclUint8, to, comm, stream);
            if (NcclResults.isError(result)) {
                ncclGroupEnd();
                return result;
            }
        }
        if (in > 0) {
            result = ncclRecv(recv.at(0), in, ncclUint8, from, comm, stream);
            if (NcclResults.isError(result)) {
                ncclGroupEnd();
                return result;
            }
        }
        return ncclGroupEnd();
    }
}
