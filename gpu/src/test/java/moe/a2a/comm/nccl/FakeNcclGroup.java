package moe.a2a.comm.nccl;

import static org.bytedeco.cuda.global.nccl.ncclBfloat16;
import static org.bytedeco.cuda.global.nccl.ncclFloat16;
import static org.bytedeco.cuda.global.nccl.ncclFloat32;
import static org.bytedeco.cuda.global.nccl.ncclInProgress;
import static org.bytedeco.cuda.global.nccl.ncclInvalidArgument;
import static org.bytedeco.cuda.global.nccl.ncclInvalidUsage;
import static org.bytedeco.cuda.global.nccl.ncclMax;
import static org.bytedeco.cuda.global.nccl.ncclMin;
import static org.bytedeco.cuda.global.nccl.ncclSuccess;
import static org.bytedeco.cuda.global.nccl.ncclSum;
import static org.bytedeco.cuda.global.nccl.ncclSystemError;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Function;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.GroupShrink;
import moe.a2a.gpu.CudaMemory;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import org.bytedeco.cuda.cudart.CUstream_st;

/**
 * NCCL simulated in one JVM for tests without a GPU.
 *
 * <p>Sends and receives (the grouped all-to-all-v and point-to-point) post messages to mailboxes
 * keyed by (source, destination, sequence number of the pair), so each ordered pair's messages
 * match in order, as in NCCL; a sender is idle once its receiver has taken the message, a receiver
 * once every message it expects has arrived. The collectives ({@code ncclAllReduce}, {@code
 * ncclAllGather}, {@code ncclReduceScatter}, {@code ncclBroadcast}) meet in rounds numbered by each
 * rank's count of collective calls: every rank posts its input, and each computes its own result
 * from all of them once all are there (reductions in fp32, rank 0 first, rounded to the element
 * type at every step, as a chain of NCCL reductions would).
 *
 * <p>Like NCCL, a missing peer is not an error, only never idle; unlike NCCL (which would hang or
 * corrupt memory), a message of another length than its receiver expects, or ranks that disagree on
 * a collective, show up as an asynchronous error on the ranks involved, naming both sides. An abort
 * is local to its rank, as {@code ncclCommAbort} is.
 *
 * <p>{@code ncclCommShrink} is stricter than NCCL promises: the survivors meet in one group of
 * their own, renumbered in order; an excluded rank that calls it, or an aborted or closed parent,
 * fails at once; a survivor whose exclusion list differs from the first caller's fails every
 * survivor; and a parent that was shrunk refuses any later call.
 */
public final class FakeNcclGroup {
    private static final int POSTED = 0;
    private static final int TAKEN = 1;
    private static final int REFUSED = 2;

    private final int size;
    private final ConcurrentHashMap<String, Message> mailboxes = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Long, Round> rounds = new ConcurrentHashMap<>();
    private final AtomicReference<Shrink> shrink = new AtomicReference<>();
    private final List<Rank> ranks = new CopyOnWriteArrayList<>();

    public FakeNcclGroup(int size) {
        this.size = size;
    }

    NcclBackend backend(int rank) {
        Rank r = new Rank(rank);
        ranks.add(r);
        return r;
    }

    /** The number of ranks the group was made for. */
    public int size() {
        return size;
    }

    /**
     * Fails every rank of this group with an asynchronous error, as NCCL reports a broken
     * connection: each rank's next wait aborts its communicator.
     */
    public void fail(String text) {
        for (Rank r : ranks) {
            r.errorText = text;
            r.error = ncclSystemError;
        }
    }

    /**
     * A CUDA graph captured with {@code rank}'s calls ({@code delta} 1) or destroyed (-1): while
     * any is left, that rank's abort or destroy fails, where NCCL would wait forever.
     */
    public void graphs(int rank, int delta) {
        for (Rank r : ranks) {
            if (r.rank == rank) {
                r.graphs += delta;
            }
        }
    }

    /** {@code rank}'s stream is being captured into a CUDA graph ({@code open}), or no longer. */
    public void capture(int rank, boolean open) {
        for (Rank r : ranks) {
            if (r.rank == rank) {
                r.captured = open;
            }
        }
    }

    /**
     * {@code rank}'s device is stuck for good, as a hung kernel leaves it: what it launches from
     * now on never runs (nothing is sent), and it is never idle again; only an abort ends its wait.
     */
    public void stick(int rank) {
        for (Rank r : ranks) {
            if (r.rank == rank) {
                r.stuck = true;
            }
        }
    }

    /** Whether {@code rank}'s stream was queried while captured, which invalidates a capture. */
    public boolean queriedUnderCapture(int rank) {
        return ranks.stream().anyMatch(r -> r.rank == rank && r.queriedUnderCapture);
    }

    /** The thread that aborted {@code rank}'s communicator, or "" while it was not. */
    public String abortedOn(int rank) {
        return ranks.stream()
                .filter(r -> r.rank == rank)
                .map(r -> r.abortedOn)
                .findFirst()
                .orElse("");
    }

    /** Whether {@code rank}'s communicator was aborted. */
    public boolean aborted(int rank) {
        return ranks.stream().anyMatch(r -> r.rank == rank && r.aborted);
    }

    /** Whether {@code rank}'s communicator was destroyed or aborted and closed. */
    public boolean closed(int rank) {
        return ranks.stream().anyMatch(r -> r.rank == rank && r.isClosed());
    }

    /** Whether {@code rank} has launched work that has not finished. */
    public boolean pending(int rank) {
        return ranks.stream().anyMatch(r -> r.rank == rank && r.hasPending());
    }

    /** A fresh simulated group of {@code size} ranks: its communicators, in rank order. */
    public static Communicator[] group(int size, long timeoutNs) {
        FakeNcclGroup group = new FakeNcclGroup(size);
        Communicator[] comms = new Communicator[size];
        for (int r = 0; r < size; r++) {
            comms[r] = group.communicator(r, timeoutNs);
        }
        return comms;
    }

    /** {@code rank}'s {@link NcclCommunicator} in this simulated group (host buffers only). */
    public NcclCommunicator communicator(int rank, long timeoutNs) {
        return new NcclCommunicator(backend(rank), NcclWatchdog.system(), timeoutNs);
    }

    /** One point-to-point message; its receiver takes it or refuses it. */
    private static final class Message {
        final byte[] bytes;
        volatile int state = POSTED;
        volatile String refusal = "";

        Message(byte[] bytes) {
            this.bytes = bytes;
        }
    }

    /** A message a rank waits for, and where it lands in the receive staging. */
    private record Expected(int src, String key, long offset, long bytes) {}

    /** One collective call: what every rank called and its input. */
    private final class Round {
        final AtomicReferenceArray<String> calls = new AtomicReferenceArray<>(size);
        final AtomicReferenceArray<byte[]> inputs = new AtomicReferenceArray<>(size);
        final AtomicInteger unread = new AtomicInteger(size);
    }

    /** The one shrink of this group: the first caller's exclusion list, and the group it makes. */
    private final class Shrink {
        final int[] excluded;
        final FakeNcclGroup child;
        final AtomicInteger arrived = new AtomicInteger();
        volatile String mismatch = "";

        Shrink(int[] excluded) {
            this.excluded = excluded;
            this.child = new FakeNcclGroup(size - excluded.length);
        }

        /** ncclSuccess once every survivor called, an error if lists differ, else in progress. */
        int state() {
            if (!mismatch.isEmpty()) {
                return ncclInvalidUsage;
            }
            return arrived.get() == child.size ? ncclSuccess : ncclInProgress;
        }
    }

    /** A rank's collective in flight: its round, what it called, how it computes its result. */
    private record Pending(long seq, Round round, String call, Function<byte[][], byte[]> result) {}

    private final class Rank implements NcclBackend {
        private final int rank;
        private final long[] sent = new long[size];
        private final long[] received = new long[size];
        private final List<Message> outgoing = new ArrayList<>();
        private final List<Expected> expected = new ArrayList<>();
        private long collectives;
        private Pending pending;
        private ByteBuffer send = ByteBuffer.allocate(0);
        private ByteBuffer recv = ByteBuffer.allocate(0);
        private volatile int error = ncclSuccess;
        private volatile String errorText = "";
        private volatile boolean aborted;
        private volatile String abortedOn = "";
        private volatile int graphs;
        private volatile boolean captured;
        private volatile boolean queriedUnderCapture;
        private volatile boolean stuck;
        private boolean closed;
        private boolean shrunk;

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
            if (!launchable()) {
                return ncclSystemError;
            }
            for (int p = 0; p < size; p++) {
                post(p, sendOffsets[p], sendBytes[p]);
            }
            for (int p = 0; p < size; p++) {
                expect(p, recvOffsets[p], recvBytes[p]);
            }
            recvStaging(recvOffsets[size - 1] + recvBytes[size - 1]);
            return ncclSuccess;
        }

        @Override
        public synchronized int sendRecv(int to, long sendBytes, int from, long recvBytes) {
            if (!launchable()) {
                return ncclSystemError;
            }
            if (to != Communicator.NONE) {
                post(to, 0, sendBytes);
            }
            if (from != Communicator.NONE) {
                expect(from, 0, recvBytes);
                recvStaging(recvBytes);
            }
            return ncclSuccess;
        }

        @Override
        public synchronized int allReduce(long count, int datatype, int op) {
            DType dtype = dtype(datatype);
            ReduceOp reduceOp = reduceOp(op);
            int bytes = (int) count * dtype.sizeBytes();
            return collective(
                    "ncclAllReduce(count=" + count + ", datatype=" + datatype + ", op=" + op + ")",
                    bytes,
                    bytes,
                    inputs -> reduce(inputs, 0, (int) count, dtype, reduceOp));
        }

        @Override
        public synchronized int allGather(long bytesPerRank) {
            int block = (int) bytesPerRank;
            return collective(
                    "ncclAllGather(sendcount=" + bytesPerRank + ", datatype=ncclUint8)",
                    block,
                    (long) size * block,
                    inputs -> {
                        byte[] out = new byte[size * block];
                        for (int p = 0; p < size; p++) {
                            System.arraycopy(inputs[p], 0, out, p * block, block);
                        }
                        return out;
                    });
        }

        @Override
        public synchronized int reduceScatter(long countPerRank, int datatype, int op) {
            DType dtype = dtype(datatype);
            ReduceOp reduceOp = reduceOp(op);
            int count = (int) countPerRank;
            int blockBytes = count * dtype.sizeBytes();
            return collective(
                    "ncclReduceScatter(recvcount="
                            + countPerRank
                            + ", datatype="
                            + datatype
                            + ", op="
                            + op
                            + ")",
                    (long) size * blockBytes,
                    blockBytes,
                    inputs -> reduce(inputs, rank * blockBytes, count, dtype, reduceOp));
        }

        @Override
        public synchronized int broadcast(long bytes, int root) {
            return collective(
                    "ncclBroadcast(count=" + bytes + ", datatype=ncclUint8, root=" + root + ")",
                    rank == root ? bytes : 0,
                    bytes,
                    inputs -> inputs[root]);
        }

        /**
         * Posts this rank's input (the first {@code inputBytes} of the send staging) to the next
         * round; {@link #isIdle} computes the result once every rank's input is there.
         */
        private int collective(
                String call, long inputBytes, long resultBytes, Function<byte[][], byte[]> result) {
            if (!launchable()) {
                return ncclSystemError;
            }
            byte[] input = new byte[(int) inputBytes];
            send.get(0, input);
            long seq = collectives++;
            Round round = rounds.computeIfAbsent(seq, k -> new Round());
            if (!stuck) {
                round.calls.set(rank, call);
                round.inputs.set(rank, input);
            }
            recvStaging(resultBytes);
            pending = new Pending(seq, round, call, result);
            return ncclSuccess;
        }

        /** {@code inputs[0] op inputs[1] op ...}, element by element, from byte {@code at}. */
        private byte[] reduce(byte[][] inputs, int at, int count, DType dtype, ReduceOp op) {
            int es = dtype.sizeBytes();
            ByteBuffer acc =
                    ByteBuffer.allocate(count * es)
                            .order(ByteOrder.LITTLE_ENDIAN)
                            .put(0, inputs[0], at, count * es);
            for (int p = 1; p < size; p++) {
                ByteBuffer in = ByteBuffer.wrap(inputs[p]).order(ByteOrder.LITTLE_ENDIAN);
                for (int i = 0; i < count; i++) {
                    dtype.put(
                            acc,
                            i * es,
                            op.apply(dtype.get(acc, i * es), dtype.get(in, at + i * es)));
                }
            }
            return acc.array();
        }

        private boolean launchable() {
            if (closed) {
                throw new IllegalStateException("exchange after close");
            }
            if (shrunk) {
                throw new IllegalStateException("fake: exchange on a parent after ncclCommShrink");
            }
            return !aborted;
        }

        @Override
        public synchronized boolean canShrink() {
            return !aborted && !closed && !shrunk;
        }

        @Override
        public NcclBackend shrink(int[] excludedRanks, long timeoutNs, NcclWatchdog watchdog) {
            int[] excluded = excludedRanks.clone();
            synchronized (this) {
                if (!canShrink()) {
                    throw new A2aException(
                            "fake: ncclCommShrink on rank "
                                    + rank
                                    + "'s parent: aborted="
                                    + aborted
                                    + ", closed="
                                    + closed
                                    + ", shrunk="
                                    + shrunk);
                }
                if (Arrays.binarySearch(excluded, rank) >= 0) {
                    throw NcclResults.failure(
                            ncclInvalidArgument,
                            "ncclCommShrink(excluded=" + Arrays.toString(excluded) + ")",
                            rank,
                            "fake: an excluded rank called ncclCommShrink");
                }
                shrunk = true;
            }
            Shrink round =
                    FakeNcclGroup.this.shrink.updateAndGet(
                            s -> s != null ? s : new Shrink(excluded));
            if (!Arrays.equals(round.excluded, excluded)) {
                round.mismatch =
                        "fake: rank "
                                + rank
                                + " excluded "
                                + Arrays.toString(excluded)
                                + ", the first survivor "
                                + Arrays.toString(round.excluded);
            }
            round.arrived.incrementAndGet();
            try {
                awaitShrink(round, timeoutNs, watchdog);
            } catch (RuntimeException e) {
                // as the CUDA backend: the parent's abort ends a shrink that failed
                abort();
                throw e;
            }
            return round.child.backend(GroupShrink.survivorRank(rank, excluded));
        }

        private void awaitShrink(Shrink round, long timeoutNs, NcclWatchdog watchdog) {
            watchdog.await(
                    new NcclWatchdog.Progress() {
                        @Override
                        public int asyncError() {
                            return round.state();
                        }

                        @Override
                        public boolean isIdle() {
                            return round.state() == ncclSuccess;
                        }

                        @Override
                        public void abort() {}

                        @Override
                        public String lastError() {
                            return round.mismatch;
                        }
                    },
                    timeoutNs,
                    -1,
                    ExchangePhase.BARRIER,
                    rank,
                    "ncclCommShrink");
        }

        private void post(int dst, long offset, long bytes) {
            if (stuck) {
                return;
            }
            byte[] segment = new byte[(int) bytes];
            send.get((int) offset, segment);
            Message m = new Message(segment);
            outgoing.add(m);
            mailboxes.put(key(rank, dst, sent[dst]++), m);
        }

        private void expect(int src, long offset, long bytes) {
            expected.add(new Expected(src, key(src, rank, received[src]++), offset, bytes));
        }

        @Override
        public synchronized boolean isIdle() {
            if (captured) {
                // CUDA would invalidate the capture: a stream under capture must not be queried
                queriedUnderCapture = true;
                return false;
            }
            if (stuck) {
                return false;
            }
            if (error != ncclSuccess) {
                return false;
            }
            for (Iterator<Expected> it = expected.iterator(); it.hasNext(); ) {
                Expected e = it.next();
                Message m = mailboxes.remove(e.key());
                if (m == null) {
                    continue;
                }
                if (m.bytes.length != e.bytes()) {
                    String text =
                            "fake: rank "
                                    + e.src()
                                    + " sent "
                                    + m.bytes.length
                                    + " bytes to rank "
                                    + rank
                                    + ", which expected "
                                    + e.bytes();
                    m.refusal = text;
                    m.state = REFUSED;
                    fail(text);
                    return false;
                }
                recv.put((int) e.offset(), m.bytes);
                m.state = TAKEN;
                it.remove();
            }
            for (Iterator<Message> it = outgoing.iterator(); it.hasNext(); ) {
                Message m = it.next();
                if (m.state == REFUSED) {
                    fail(m.refusal);
                    return false;
                }
                if (m.state == TAKEN) {
                    it.remove();
                }
            }
            if (!expected.isEmpty() || !outgoing.isEmpty()) {
                return false;
            }
            return pending == null || finishCollective();
        }

        /** Computes this rank's result of the pending collective once every rank's input is in. */
        private boolean finishCollective() {
            Round round = pending.round();
            byte[][] inputs = new byte[size][];
            for (int p = 0; p < size; p++) {
                inputs[p] = round.inputs.get(p);
                if (inputs[p] == null) {
                    return false;
                }
            }
            for (int p = 0; p < size; p++) {
                if (!pending.call().equals(round.calls.get(p))) {
                    fail(
                            "fake: rank "
                                    + rank
                                    + " called "
                                    + pending.call()
                                    + ", rank "
                                    + p
                                    + " "
                                    + round.calls.get(p));
                    return false;
                }
            }
            byte[] out = pending.result().apply(inputs);
            recv.put(0, out);
            if (round.unread.decrementAndGet() == 0) {
                rounds.remove(pending.seq());
            }
            pending = null;
            return true;
        }

        private void fail(String text) {
            errorText = text;
            error = ncclInvalidUsage;
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
            return errorText;
        }

        @Override
        public void abort() {
            holdingGraphs("ncclCommAbort");
            abortedOn = Thread.currentThread().getName();
            aborted = true;
        }

        /** As NCCL 2.26+: abort and destroy wait for as long as a graph holds the communicator. */
        private void holdingGraphs(String call) {
            if (graphs > 0) {
                throw new IllegalStateException(
                        "fake: "
                                + call
                                + " of rank "
                                + rank
                                + " would wait forever: "
                                + graphs
                                + " CUDA graph(s) still hold the communicator");
            }
        }

        /** Host staging only: nothing to free. */
        @Override
        public void retire() {}

        synchronized boolean isClosed() {
            return closed;
        }

        synchronized boolean hasPending() {
            return !expected.isEmpty() || pending != null;
        }

        @Override
        public synchronized void close() {
            if (!aborted) {
                holdingGraphs("ncclCommDestroy");
            }
            closed = true;
        }
    }

    private static String key(int src, int dst, long seq) {
        return src + ">" + dst + "#" + seq;
    }

    private static DType dtype(int datatype) {
        return switch (datatype) {
            case ncclFloat32 -> DType.FP32;
            case ncclBfloat16 -> DType.BF16;
            case ncclFloat16 -> DType.FP16;
            default -> throw new IllegalArgumentException("datatype: " + datatype);
        };
    }

    private static ReduceOp reduceOp(int op) {
        return switch (op) {
            case ncclSum -> ReduceOp.SUM;
            case ncclMax -> ReduceOp.MAX;
            case ncclMin -> ReduceOp.MIN;
            default -> throw new IllegalArgumentException("op: " + op);
        };
    }
}
