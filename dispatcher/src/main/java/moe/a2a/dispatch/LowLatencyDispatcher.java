package moe.a2a.dispatch;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.util.Arrays;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.SegmentWriter;
import moe.a2a.kernels.DType;

/**
 * One rank's data path for small batches, at most {@code maxTokens} tokens a rank: every exchange
 * has sizes known in advance, so dispatch is one exchange and combine is one, with no count
 * exchange before either. Each source has a fixed region on every rank of {@code maxTokens + 1}
 * rows (a token goes to a rank at most once): its rows packed from the region's start, as a normal
 * dispatch packs them (payload, then each choice's local slot and weight), and in the region's last
 * row the number of rows that are valid. The receiver learns the counts from the data itself.
 * Combine sends each region back as fixed rows too; the source reads only the rows it sent.
 *
 * <p>What travels depends on the transport. In-process only the valid rows and the count are
 * written, and the sources read combine's rows where the experts' ranks wrote them. Over shared
 * memory dispatch writes only the valid rows and the count, and combine copies whole regions. Over
 * TCP whole regions travel both ways. The experts read their rows grouped by local expert from the
 * regions, as {@link Dispatcher}'s rows. Answers are bit for bit those of {@link Dispatcher}: the
 * same rows are summed in the same order.
 *
 * <p>Off-heap buffers are sized by the first dispatch of each dtype and reused. Owned by the rank
 * thread.
 */
public final class LowLatencyDispatcher implements DispatchPath {
    private final Communicator comm;
    private Placement placement;
    private final int topK;
    private final int rank;
    private final int worldSize;
    private final int maxTokens;
    private final DispatchDType dispatchDType;
    private final DispatchLayout layout;
    private final DispatchHandle handle;
    private final DispatchResult result;
    private final DispatchRowLayout[] rowLayouts = new DispatchRowLayout[DType.values().length];
    private final long[] sendBytes;
    private final long[] recvBytes;
    private final RowPacker packer;
    private final Regions regions;
    private final RowReducer reducer;
    private final RecvGrouping grouping;
    private final Fp8Quantizer quantizer;
    private ByteBuffer recvBuffer = Dispatcher.allocate(0);
    private ByteBuffer ownRecvBuffer = Dispatcher.allocate(0);
    private ByteBuffer combineSend = Dispatcher.allocate(0);
    private long nextStep;

    /**
     * @param maxTokens the most tokens a rank dispatches in one step ({@code --ll-max-tokens})
     * @throws IllegalArgumentException when {@code maxTokens} is not positive, or {@code placement}
     *     is not of {@code comm}'s size
     */
    public LowLatencyDispatcher(
            Communicator comm,
            Placement placement,
            int hidden,
            int topK,
            DispatchDType dispatchDType,
            int maxTokens) {
        Dispatcher.checkWorld(placement, comm);
        if (maxTokens < 1) {
            throw new IllegalArgumentException(
                    "--ll-max-tokens: " + maxTokens + " (expected: >= 1 token a rank)");
        }
        this.comm = comm;
        this.placement = placement;
        this.topK = topK;
        this.rank = comm.rank();
        this.worldSize = comm.size();
        this.maxTokens = maxTokens;
        this.dispatchDType = dispatchDType;
        this.quantizer = new Fp8Quantizer(hidden);
        this.layout = new DispatchLayout(placement, rank);
        this.handle = new DispatchHandle(layout, worldSize, placement.localExperts(rank));
        this.result = new DispatchResult(handle);
        this.sendBytes = new long[worldSize];
        this.recvBytes = new long[worldSize];
        this.packer = new RowPacker(layout, topK, worldSize);
        this.regions = new Regions();
        this.reducer = new RowReducer(layout, hidden, worldSize);
        this.grouping = new RecvGrouping(rank, topK, placement.localExperts(rank));
        for (DType dtype : DType.values()) {
            rowLayouts[dtype.ordinal()] = new DispatchRowLayout(hidden, topK, dtype, dispatchDType);
        }
    }

    /** The most tokens a rank may dispatch in one step. */
    public int maxTokens() {
        return maxTokens;
    }

    public Communicator communicator() {
        return comm;
    }

    /** How rows travel in this dispatcher's dispatch. */
    public DispatchDType dispatchDType() {
        return dispatchDType;
    }

    @Override
    public int worldSize() {
        return worldSize;
    }

    @Override
    public DispatchLayout layout() {
        return layout;
    }

    @Override
    public void use(Placement next) {
        if (next == placement) {
            return;
        }
        Dispatcher.checkSlots(next, rank, grouping.localExperts());
        layout.use(next);
        placement = next;
    }

    /**
     * {@inheritDoc}
     *
     * @throws IllegalArgumentException when {@code numTokens} is over {@link #maxTokens}
     */
    @Override
    public DispatchResult dispatch(
            ByteBuffer tokens, int numTokens, DType dtype, int[] topkIds, float[] topkWeights) {
        if (numTokens > maxTokens) {
            throw new IllegalArgumentException(
                    "numTokens: "
                            + numTokens
                            + " (expected: <= "
                            + maxTokens
                            + ", the low-latency bound --ll-max-tokens)");
        }
        final DispatchRowLayout row = rowLayouts[dtype.ordinal()];
        final int regionRows = maxTokens + 1;
        final long regionBytes = (long) regionRows * row.rowBytes();
        handle.rowLayout = row;
        layout.compute(topkIds, numTokens, topK);
        Arrays.fill(sendBytes, regionBytes);
        Arrays.fill(recvBytes, regionBytes);
        handle.step = nextStep++;
        final ByteBuffer payloads =
                dispatchDType == DispatchDType.FP8
                        ? quantizer.quantize(tokens, numTokens, dtype)
                        : tokens;
        packer.prepare(payloads, row, topkWeights);
        regions.countAt = maxTokens * row.rowBytes();
        if (comm.receivesInPlace()) {
            recvBuffer =
                    comm.allToAllVInPlace(
                            handle.step, ExchangePhase.DISPATCH, regions, sendBytes, recvBytes);
        } else {
            ownRecvBuffer = Dispatcher.ensure(ownRecvBuffer, worldSize * regionBytes);
            recvBuffer = ownRecvBuffer;
            comm.allToAllV(
                    handle.step, ExchangePhase.DISPATCH, regions, sendBytes, recvBuffer, recvBytes);
        }
        int received = 0;
        for (int s = 0; s < worldSize; s++) {
            final int count = recvBuffer.getInt((int) (s * regionBytes + regions.countAt));
            if (count < 0 || count > maxTokens) {
                throw new A2aException(
                        "low-latency region count out of range: rank="
                                + rank
                                + ", source="
                                + s
                                + ", count="
                                + count
                                + ", maxTokens="
                                + maxTokens);
            }
            handle.recvRowsPerRank[s] = count;
            handle.recvRunStart[s] = s * regionRows;
            received += count;
        }
        handle.numRecvTokens = received;
        handle.recvRowSpan = worldSize * regionRows;
        grouping.group(
                handle, recvBuffer, row, handle.recvRunStart, handle.recvRowsPerRank, worldSize);
        result.recvBuffer = recvBuffer;
        return result;
    }

    @Override
    public ByteBuffer combineRows(DispatchHandle handle) {
        combineSend =
                Dispatcher.ensure(
                        combineSend,
                        (long) handle.recvRowSpan * handle.rowLayout.combineRowBytes());
        return combineSend;
    }

    /** {@inheritDoc} Every region goes back whole; the source reads the rows it sent. */
    @Override
    public void combine(DispatchHandle handle, FloatBuffer out) {
        final long regionBytes = (long) (maxTokens + 1) * handle.rowLayout.combineRowBytes();
        Arrays.fill(sendBytes, regionBytes);
        Arrays.fill(recvBytes, regionBytes);
        reducer.prepare(handle.rowLayout, out);
        comm.allToAllV(
                handle.step, ExchangePhase.COMBINE, combineSend, sendBytes, reducer, recvBytes);
    }

    /**
     * Writes each destination's region: its rows from the start, as {@link RowPacker} packs them,
     * and their count in the region's last row.
     */
    private final class Regions implements SegmentWriter {
        int countAt;

        @Override
        public void write(int peer, ByteBuffer dst, int dstOffset) {
            packer.write(peer, dst, dstOffset);
            dst.putInt(dstOffset + countAt, (int) layout.tokensPerRank(peer));
        }

        @Override
        public void writeAll(ByteBuffer[] dsts, long[] dstOffsets, long[] lengths) {
            packer.writeAll(dsts, dstOffsets, lengths);
            for (int p = 0; p < dsts.length; p++) {
                dsts[p].putInt((int) dstOffsets[p] + countAt, (int) layout.tokensPerRank(p));
            }
        }
    }
}
