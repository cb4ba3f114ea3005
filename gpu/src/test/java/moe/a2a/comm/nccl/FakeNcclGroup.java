package moe.a2a.comm.nccl;

import static org.bytedeco.cuda.global.nccl.ncclInvalidUsage;
import static org.bytedeco.cuda.global.nccl.ncclSuccess;
import static org.bytedeco.cuda.global.nccl.ncclSystemError;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.ConcurrentHashMap;
import moe.a2a.gpu.CudaMemory;
import org.bytedeco.cuda.cudart.CUstream_st;

/**
 * NCCL simulated in one JVM for tests without a GPU: each rank's grouped send/recv posts its
 * segments to mailboxes keyed by (exchange number, source, destination); a rank is idle once every
 * segment it expects has been posted, and then copies them into its receive staging. Like NCCL, a
 * missing peer is not an error, only never idle; unlike NCCL (which would hang or corrupt memory),
 * mismatched counts show up as an asynchronous error. An abort is local to its rank, as {@code
 * ncclCommAbort} is.
 */
public final class FakeNcclGroup {
    private final int size;
    private final ConcurrentHashMap<String, byte[]> mailboxes = new ConcurrentHashMap<>();

    public FakeNcclGroup(int size) {
        this.size = size;
    }

    NcclBackend backend(int rank) {
        return new Rank(rank);
    }

    /** {@code rank}'s {@link NcclCommunicator} in this simulated group (host buffers only). */
    public NcclCommunicator communicator(int rank, long timeoutNs) {
        return new NcclCommunicator(backend(rank), NcclWatchdog.system(), timeoutNs);
    }

    private final class Rank implements NcclBackend {
        private final int rank;
        private long exchanges;
        private ByteBuffer send = ByteBuffer.allocate(0);
        private ByteBuffer recv = ByteBuffer.allocate(0);
        private long[] pendingOffsets;
        private long[] pendingBytes;
        private volatile int error = ncclSuccess;
        private volatile boolean aborted;
        private boolean closed;

        Rank(int rank) {
            this.rank = rank;
        }

        @Override
        public int rank() {
            return rank;
        }

        @Override
        public int size() {
            return size;
        }

        @Override
        public ByteBuffer sendStaging(long bytes) {
            if (send.capacity() < bytes) {
                send = ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.LITTLE_ENDIAN);
            }
            return send;
        }

        @Override
        public ByteBuffer recvStaging(long bytes) {
            if (recv.capacity() < bytes) {
                recv = ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.LITTLE_ENDIAN);
            }
            return recv;
        }

        @Override
        public synchronized int exchange(
                long[] sendOffsets, long[] sendBytes, long[] recvOffsets, long[] recvBytes) {
            if (closed) {
                throw new IllegalStateException("exchange after close");
            }
            if (aborted) {
                return ncclSystemError;
            }
            exchanges++;
            for (int p = 0; p < size; p++) {
                byte[] segment = new byte[(int) sendBytes[p]];
                send.get((int) sendOffsets[p], segment);
                mailboxes.put(key(exchanges, rank, p), segment);
            }
            recvStaging(recvOffsets[size - 1] + recvBytes[size - 1]);
            pendingOffsets = recvOffsets.clone();
            pendingBytes = recvBytes.clone();
            return ncclSuccess;
        }

        @Override
        public synchronized boolean isIdle() {
            if (pendingOffsets == null) {
                return true;
            }
            for (int src = 0; src < size; src++) {
                if (!mailboxes.containsKey(key(exchanges, src, rank))) {
                    return false;
                }
            }
            for (int src = 0; src < size; src++) {
                byte[] segment = mailboxes.remove(key(exchanges, src, rank));
                if (segment.length != pendingBytes[src]) {
                    error = ncclInvalidUsage;
                    return false;
                }
                recv.put((int) pendingOffsets[src], segment);
            }
            pendingOffsets = null;
            return true;
        }

        @Override
        public int exchangeDevice(
                CudaMemory send,
                long[] sendOffsets,
                long[] sendBytes,
                CudaMemory recv,
                long[] recvOffsets,
                long[] recvBytes) {
            throw new UnsupportedOperationException("no device memory without a GPU");
        }

        @Override
        public CUstream_st stream() {
            throw new UnsupportedOperationException("no CUDA stream without a GPU");
        }

        @Override
        public int asyncError() {
            return aborted ? ncclSystemError : error;
        }

        @Override
        public String lastError() {
            return error == ncclInvalidUsage
                    ? "fake: counts differ between sender and receiver"
                    : "";
        }

        @Override
        public void abort() {
            aborted = true;
        }

        @Override
        public synchronized void close() {
            closed = true;
        }

        private String key(long exchange, int src, int dst) {
            return exchange + "/" + src + "/" + dst;
        }
    }
}
