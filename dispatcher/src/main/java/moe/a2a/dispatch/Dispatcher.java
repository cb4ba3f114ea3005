package moe.a2a.dispatch;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.kernels.DType;

/**
 * One rank's data path: {@link #dispatch} sends each token once to every rank hosting one of its
 * experts and groups what arrives by local expert; {@link #combine} sends back, per received token,
 * the weighted sum of the local experts' outputs and sums the partial rows at the source.
 *
 * <p>With {@link DispatchDType#FP8} each token is quantized once, before packing, and the rows
 * travel as E4M3 with block scales; combine returns rows in the tokens' own dtype either way.
 *
 * <p>Off-heap buffers grow to the largest step seen and are reused. Owned by the rank thread.
 */
public final class Dispatcher implements DispatchPath {
    private final Communicator comm;
    private Placement placement;
    private final int hidden;
    private final int topK;
    private final int rank;
    private final int worldSize;
    private final DispatchDType dispatchDType;
    private final DispatchLayout layout;
    private final DispatchHandle handle;
    private final DispatchResult result;
    private final DispatchRowLayout[] rowLayouts = new DispatchRowLayout[DType.values().length];
    private final long[] sendRows;
    private final long[] sendBytes;
    private final long[] recvBytes;
    private final RecvGrouping grouping;

    /** A normal dispatch's received rows are one run, from row 0. */
    private static final int[] RUN_STARTS = {0};

    private final long[] oneRun = new long[1];
    private final RowPacker packer;
    private final RowReducer reducer;
    private final ExpertSums sums = new ExpertSums();
    private final Fp8Quantizer quantizer;

    /** Where the last dispatch's rows are: {@link #ownRecvBuffer}, or the transport's memory. */
    private ByteBuffer recvBuffer = allocate(0);

    /** The receive buffer of a transport that does not receive in place. */
    private ByteBuffer ownRecvBuffer = allocate(0);

    private ByteBuffer combineSend = allocate(0);
    private long nextStep;

    /** A dispatcher whose rows travel as the tokens came ({@link DispatchDType#BF16}). */
    public Dispatcher(Communicator comm, Placement placement, int hidden, int topK) {
        this(comm, placement, hidden, topK, DispatchDType.BF16);
    }

    public Dispatcher(
            Communicator comm,
            Placement placement,
            int hidden,
            int topK,
            DispatchDType dispatchDType) {
        checkWorld(placement, comm);
        this.comm = comm;
        this.placement = placement;
        this.hidden = hidden;
        this.topK = topK;
        this.rank = comm.rank();
        this.worldSize = comm.size();
        this.dispatchDType = dispatchDType;
        this.quantizer = new Fp8Quantizer(hidden);
        this.layout = new DispatchLayout(placement, rank);
        this.handle = new DispatchHandle(layout, worldSize, placement.localExperts(rank));
        this.result = new DispatchResult(handle);
        this.sendRows = new long[worldSize];
        this.sendBytes = new long[worldSize];
        this.recvBytes = new long[worldSize];
        this.grouping = new RecvGrouping(rank, topK, placement.localExperts(rank));
        this.reducer = new RowReducer(layout, hidden, worldSize);
        this.packer = new RowPacker(layout, topK, worldSize);
        for (DType dtype : DType.values()) {
            rowLayouts[dtype.ordinal()] = new DispatchRowLayout(hidden, topK, dtype, dispatchDType);
        }
    }

    public Communicator communicator() {
        return comm;
    }

    @Override
    public int worldSize() {
        return worldSize;
    }

    @Override
    public DispatchLayout layout() {
        return layout;
    }

    /** The placement the next dispatch routes by. */
    public Placement placement() {
        return placement;
    }

    /**
     * Routes the next dispatches by {@code next}: the coordinator moved experts between steps. The
     * rank's slots keep their count; what they hold is the experts' business, not the dispatcher's.
     *
     * @throws IllegalArgumentException when {@code next} has another world size, expert count or
     *     number of slots on this rank
     */
    @Override
    public void use(Placement next) {
        if (next == placement) {
            return;
        }
        checkSlots(next, rank, grouping.localExperts());
        layout.use(next);
        placement = next;
    }

    /**
     * @throws IllegalArgumentException when {@code placement} has another world size than {@code
     *     comm}
     */
    static void checkWorld(Placement placement, Communicator comm) {
        if (placement.worldSize() != comm.size()) {
            throw new IllegalArgumentException(
                    "placement.worldSize: "
                            + placement.worldSize()
                            + " (expected: "
                            + comm.size()
                            + ", the communicator's size)");
        }
    }

    /**
     * @throws IllegalArgumentException when {@code next} gives {@code rank} another number of slots
     *     than {@code slots}
     */
    public static void checkSlots(Placement next, int rank, int slots) {
        if (next.localExperts(rank) != slots) {
            throw new IllegalArgumentException(
                    "placement.localExperts("
                            + rank
                            + "): "
                            + next.localExperts(rank)
                            + " (expected: "
                            + slots
                            + ", the rank's slots)");
        }
    }

    /** How rows travel in this dispatcher's dispatch. */
    public DispatchDType dispatchDType() {
        return dispatchDType;
    }

    /**
     * Dispatches {@code numTokens} tokens ({@code [T, H]} rows of {@code dtype} in {@code tokens},
     * little-endian, from index 0) routed by {@code topkIds}/{@code topkWeights} ({@code [T, K]}).
     * Every rank must call this in the same step, possibly with zero tokens.
     */
    @Override
    public DispatchResult dispatch(
            ByteBuffer tokens, int numTokens, DType dtype, int[] topkIds, float[] topkWeights) {
        final DispatchRowLayout row = rowLayouts[dtype.ordinal()];
        handle.rowLayout = row;
        layout.compute(topkIds, numTokens, topK);

        for (int r = 0; r < worldSize; r++) {
            sendRows[r] = layout.tokensPerRank(r);
            sendBytes[r] = sendRows[r] * row.rowBytes();
        }
        handle.step = nextStep++;
        comm.allToAllCounts(handle.step, ExchangePhase.DISPATCH, sendRows, handle.recvRowsPerRank);
        long totalRecv = 0;
        for (int r = 0; r < worldSize; r++) {
            recvBytes[r] = handle.recvRowsPerRank[r] * row.rowBytes();
            totalRecv += handle.recvRowsPerRank[r];
        }
        final boolean inPlace = comm.receivesInPlace();
        if (!inPlace) {
            ownRecvBuffer = ensure(ownRecvBuffer, totalRecv * row.rowBytes());
        }
        final ByteBuffer payloads =
                dispatchDType == DispatchDType.FP8
                        ? quantizer.quantize(tokens, numTokens, dtype)
                        : tokens;
        packer.prepare(payloads, row, topkWeights);
        if (inPlace) {
            // the rows stay where they landed, in the transport's receive memory: one copy
            recvBuffer =
                    comm.allToAllVInPlace(
                            handle.step, ExchangePhase.DISPATCH, packer, sendBytes, recvBytes);
        } else {
            recvBuffer = ownRecvBuffer;
            comm.allToAllV(
                    handle.step, ExchangePhase.DISPATCH, packer, sendBytes, recvBuffer, recvBytes);
        }
        handle.numRecvTokens = (int) totalRecv;
        handle.recvRowSpan = (int) totalRecv;
        int start = 0;
        for (int r = 0; r < worldSize; r++) {
            handle.recvRunStart[r] = start;
            start += (int) handle.recvRowsPerRank[r];
        }
        oneRun[0] = totalRecv;
        grouping.group(handle, recvBuffer, row, RUN_STARTS, oneRun, 1);
        result.recvBuffer = recvBuffer;
        return result;
    }

    /**
     * Combines: {@code expertOutputs} holds fp32 rows in the grouped order of {@code handle}
     * ({@code [numExpertRows, H]}); on return {@code out} ({@code [T, H]} fp32 in native order,
     * off-heap, T of the source side) holds each token's weighted sum over all its experts. Every
     * rank must call this.
     */
    public void combine(FloatBuffer expertOutputs, DispatchHandle handle, FloatBuffer out) {
        sums.write(expertOutputs, handle, combineRows(handle));
        combine(handle, out);
    }

    /**
     * The buffer of rows that {@link #combine(DispatchHandle, FloatBuffer)} sends back: one row per
     * received token, in receive order, in the dispatch's dtype, each the token's weighted sum over
     * this rank's experts. Valid until the next combine.
     */
    @Override
    public ByteBuffer combineRows(DispatchHandle handle) {
        combineSend =
                ensure(combineSend, (long) handle.recvRowSpan * handle.rowLayout.combineRowBytes());
        return combineSend;
    }

    /**
     * Sends the rows written into {@link #combineRows} back to their sources and sums, at the
     * source, every token's rows into {@code out} ({@code [T, H]} fp32, off-heap). In-process the
     * source reads the rows where the experts' ranks wrote them. Every rank must call this.
     */
    @Override
    public void combine(DispatchHandle handle, FloatBuffer out) {
        final int combineRowBytes = handle.rowLayout.combineRowBytes();
        for (int r = 0; r < worldSize; r++) {
            sendBytes[r] = handle.recvRowsPerRank[r] * combineRowBytes;
            recvBytes[r] = layout.tokensPerRank(r) * combineRowBytes;
        }
        reducer.prepare(handle.rowLayout, out);
        comm.allToAllV(
                handle.step, ExchangePhase.COMBINE, combineSend, sendBytes, reducer, recvBytes);
    }

    static ByteBuffer ensure(ByteBuffer buffer, long bytes) {
        if (bytes > Integer.MAX_VALUE) {
            throw new A2aException("step too large for one buffer: bytes=" + bytes);
        }
        return buffer.capacity() >= bytes
                ? buffer
                : allocate((int) Math.max(bytes, buffer.capacity() * 3L / 2));
    }

    static ByteBuffer allocate(int bytes) {
        return ByteBuffer.allocateDirect(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }
}
