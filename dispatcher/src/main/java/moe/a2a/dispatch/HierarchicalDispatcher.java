package moe.a2a.dispatch;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.Arrays;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.kernels.DType;

/**
 * One rank's data path across hosts: a token crosses to another host once, however many of that
 * host's ranks it visits, and fans out inside the host; the partial results of a host's experts are
 * summed inside the host and cross back once, one row per token (host-level dedup, as DeepEP does
 * between nodes).
 *
 * <p>Dispatch: (1) over the <em>rail</em> (this rank's peers of the same local index on the other
 * hosts, {@link HostTopology}), every token once to each remote host that hosts one of its chosen
 * replicas, as a row naming those replicas by host slot; (2) over the <em>host group</em>, this
 * rank's own tokens and the rows forwarded to it, by a flat {@link Dispatcher} on the host's
 * placement ({@link HostTopology#hostPlacement}), which keeps every replica its source chose.
 * Combine: (1) the host group's combine sums each token's rows over this host's experts; (2) the
 * sums of forwarded tokens cross back over the rail and the source adds them, host by host in host
 * order, to its own host's sums.
 *
 * <p>A remote host's sum is rounded to the dtype before it crosses back, where flat combine rounds
 * each rank's row only: the price of one row per host. Rows travel as the tokens came ({@link
 * DispatchDType#BF16}). Owned by the rank thread.
 */
public final class HierarchicalDispatcher implements DispatchPath {
    private static final int VIEW_HOST_OUT = 0;
    private static final int VIEW_RETURN_SEND = 1;
    private static final int VIEW_RETURN_RECV = 2;
    private static final int VIEW_OUT = 3;

    private final Communicator rail;
    private final HostTopology topology;
    private final int hidden;
    private final int topK;
    private final int host;
    private final int local;
    private final DispatchLayout layout;
    private Placement placement;
    private int[] hostSlotBase;
    private final Dispatcher hostDispatcher;
    private final DispatchRowLayout[] rowLayouts = new DispatchRowLayout[DType.values().length];
    private final SegmentViews views = new SegmentViews(4);

    /** Per remote host: tokens this rank forwards there; rows it received from there. */
    private final long[] forwardRows;

    private final long[] forwardedRows;
    private final int[] forwardOffsets;
    private final int[] lastToken;
    private final long[] sendBytes;
    private final long[] recvBytes;

    /** The tokens forwarded in the last dispatch, grouped by host in host then token order. */
    private int[] forwardTokens = new int[0];

    private int[] hostIds = new int[0];
    private float[] hostWeights = new float[0];
    private ByteBuffer forwardSend = Dispatcher.allocate(0);
    private ByteBuffer forwardRecv = Dispatcher.allocate(0);
    private ByteBuffer hostTokens = Dispatcher.allocate(0);
    private ByteBuffer returnSend = Dispatcher.allocate(0);
    private ByteBuffer returnRecv = Dispatcher.allocate(0);
    private ByteBuffer hostOut = Dispatcher.allocate(0);
    private FloatBuffer hostOutFloats = hostOut.asFloatBuffer();
    private final int[] cursor;
    private DispatchRowLayout row;
    private int numTokens;
    private int numForwarded;
    private long railStep;
    private long interHostBytes;

    /**
     * @param rail this rank's rail: one rank per host, its rank the host's index
     * @param hostGroup the ranks of this rank's host, its rank this rank's local index
     */
    public HierarchicalDispatcher(
            Communicator rail,
            Communicator hostGroup,
            HostTopology topology,
            Placement placement,
            int hidden,
            int topK) {
        if (rail.size() != topology.hosts()) {
            throw new IllegalArgumentException(
                    "rail.size: " + rail.size() + " (expected: " + topology.hosts() + ", hosts)");
        }
        if (hostGroup.size() != topology.ranksPerHost()) {
            throw new IllegalArgumentException(
                    "hostGroup.size: "
                            + hostGroup.size()
                            + " (expected: "
                            + topology.ranksPerHost()
                            + ", ranksPerHost)");
        }
        this.rail = rail;
        this.topology = topology;
        this.hidden = hidden;
        this.topK = topK;
        this.host = rail.rank();
        this.local = hostGroup.rank();
        this.placement = placement;
        int rank = topology.rank(host, local);
        this.layout = new DispatchLayout(placement, rank);
        this.hostSlotBase = topology.hostSlotBase(placement);
        this.hostDispatcher =
                new Dispatcher(hostGroup, topology.hostPlacement(placement, host), hidden, topK);
        int hosts = topology.hosts();
        this.forwardRows = new long[hosts];
        this.forwardedRows = new long[hosts];
        this.forwardOffsets = new int[hosts + 1];
        this.lastToken = new int[hosts];
        this.sendBytes = new long[hosts];
        this.recvBytes = new long[hosts];
        this.cursor = new int[hosts];
        for (DType dtype : DType.values()) {
            rowLayouts[dtype.ordinal()] =
                    new DispatchRowLayout(hidden, topK, dtype, DispatchDType.BF16);
        }
        this.row = rowLayouts[DType.BF16.ordinal()];
    }

    /** Bytes this rank has sent to other hosts, rows of dispatch and combine, since it was made. */
    public long interHostBytes() {
        return interHostBytes;
    }

    /**
     * {@inheritDoc} The host group routes by the host's share of {@code next} ({@link
     * HostTopology#hostPlacement}).
     */
    @Override
    public void use(Placement next) {
        if (next == placement) {
            return;
        }
        int[] base = topology.hostSlotBase(next);
        hostDispatcher.use(topology.hostPlacement(next, host));
        layout.use(next);
        hostSlotBase = base;
        placement = next;
    }

    @Override
    public int worldSize() {
        return topology.worldSize();
    }

    @Override
    public DispatchLayout layout() {
        return layout;
    }

    /**
     * {@inheritDoc} The rows inside the host go to and come from this host's ranks (forwarded ones
     * among them); the forwarded rows go to and come from the rail's peers.
     */
    @Override
    public void countRows(DispatchHandle handle, long[] sentTo, long[] receivedFrom) {
        for (int l = 0; l < topology.ranksPerHost(); l++) {
            int peer = topology.rank(host, l);
            sentTo[peer] += handle.layout().tokensPerRank(l);
            receivedFrom[peer] += handle.recvRowsFrom(l);
        }
        for (int h = 0; h < topology.hosts(); h++) {
            if (h != host) {
                int peer = topology.rank(h, local);
                sentTo[peer] += forwardRows[h];
                receivedFrom[peer] += forwardedRows[h];
            }
        }
    }

    @Override
    public DispatchResult dispatch(
            ByteBuffer tokens, int numTokens, DType dtype, int[] topkIds, float[] topkWeights) {
        this.row = rowLayouts[dtype.ordinal()];
        this.numTokens = numTokens;
        layout.compute(topkIds, numTokens, topK);
        route(numTokens, topkWeights);
        railStep++;
        rail.allToAllCounts(railStep, ExchangePhase.DISPATCH, forwardRows, forwardedRows);
        final int rowBytes = row.rowBytes();
        long forwarded = 0;
        for (int h = 0; h < forwardRows.length; h++) {
            sendBytes[h] = forwardRows[h] * rowBytes;
            recvBytes[h] = forwardedRows[h] * rowBytes;
            forwarded += forwardedRows[h];
            interHostBytes += sendBytes[h];
        }
        forwardSend =
                Dispatcher.ensure(
                        forwardSend, (long) forwardOffsets[forwardRows.length] * rowBytes);
        packForward(tokens);
        forwardRecv = Dispatcher.ensure(forwardRecv, forwarded * rowBytes);
        rail.allToAllV(
                railStep, ExchangePhase.DISPATCH, forwardSend, sendBytes, forwardRecv, recvBytes);
        numForwarded = (int) forwarded;
        gatherHostTokens(tokens);
        return hostDispatcher.dispatch(
                hostTokens, numTokens + numForwarded, dtype, hostIds, hostWeights);
    }

    /**
     * Names each choice by host slot for this host's group (others dropped), and lists, per remote
     * host, the tokens with a choice there.
     */
    private void route(int numTokens, float[] topkWeights) {
        final int assignments = numTokens * topK;
        if (hostIds.length < assignments) {
            hostIds = new int[assignments];
            hostWeights = new float[assignments];
        }
        System.arraycopy(topkWeights, 0, hostWeights, 0, assignments);
        Arrays.fill(forwardRows, 0);
        Arrays.fill(lastToken, -1);
        for (int t = 0; t < numTokens; t++) {
            for (int k = 0; k < topK; k++) {
                final int a = t * topK + k;
                final int r = layout.chosenRank(a);
                final int h = r < 0 ? -1 : topology.host(r);
                hostIds[a] =
                        h == host ? hostSlotBase[r] + layout.chosenSlot(a) : CapacityFilter.DROPPED;
                if (h >= 0 && h != host && lastToken[h] != t) {
                    lastToken[h] = t;
                    forwardRows[h]++;
                }
            }
        }
        for (int h = 0; h < forwardRows.length; h++) {
            forwardOffsets[h + 1] = forwardOffsets[h] + (int) forwardRows[h];
        }
        if (forwardTokens.length < forwardOffsets[forwardRows.length]) {
            forwardTokens = new int[forwardOffsets[forwardRows.length]];
        }
        Arrays.fill(lastToken, -1);
        System.arraycopy(forwardOffsets, 0, cursor, 0, forwardRows.length);
        for (int t = 0; t < numTokens; t++) {
            for (int k = 0; k < topK; k++) {
                final int r = layout.chosenRank(t * topK + k);
                final int h = r < 0 ? -1 : topology.host(r);
                if (h >= 0 && h != host && lastToken[h] != t) {
                    lastToken[h] = t;
                    forwardTokens[cursor[h]++] = t;
                }
            }
        }
    }

    /** Each forwarded token's row: its payload, then per choice the host slot there and weight. */
    private void packForward(ByteBuffer tokens) {
        final int payload = row.payloadBytes();
        final int rowBytes = row.rowBytes();
        for (int h = 0; h < forwardRows.length; h++) {
            for (int i = forwardOffsets[h]; i < forwardOffsets[h + 1]; i++) {
                final int t = forwardTokens[i];
                final int at = i * rowBytes;
                forwardSend.put(at, tokens, t * payload, payload);
                for (int k = 0; k < topK; k++) {
                    final int a = t * topK + k;
                    final int r = layout.chosenRank(a);
                    final boolean there = r >= 0 && topology.host(r) == h;
                    forwardSend.putInt(
                            at + row.slotOffset(k),
                            there
                                    ? hostSlotBase[r] + layout.chosenSlot(a)
                                    : CapacityFilter.DROPPED);
                    forwardSend.putFloat(at + row.weightOffset(k), hostWeights[a]);
                }
            }
        }
    }

    /** The host group's tokens: this rank's own, then the forwarded rows in rail-rank order. */
    private void gatherHostTokens(ByteBuffer tokens) {
        final int payload = row.payloadBytes();
        final int rowBytes = row.rowBytes();
        final int total = numTokens + numForwarded;
        hostTokens = Dispatcher.ensure(hostTokens, (long) total * payload);
        hostTokens.put(0, tokens, 0, numTokens * payload);
        if (hostIds.length < total * topK) {
            hostIds = Arrays.copyOf(hostIds, total * topK);
            hostWeights = Arrays.copyOf(hostWeights, total * topK);
        }
        for (int j = 0; j < numForwarded; j++) {
            final int at = j * rowBytes;
            hostTokens.put((numTokens + j) * payload, forwardRecv, at, payload);
            for (int k = 0; k < topK; k++) {
                final int a = (numTokens + j) * topK + k;
                hostIds[a] = forwardRecv.getInt(at + row.slotOffset(k));
                hostWeights[a] = forwardRecv.getFloat(at + row.weightOffset(k));
            }
        }
    }

    @Override
    public ByteBuffer combineRows(DispatchHandle handle) {
        return hostDispatcher.combineRows(handle);
    }

    @Override
    public void combine(DispatchHandle handle, FloatBuffer out) {
        final int total = numTokens + numForwarded;
        final long rowFloatBytes = (long) hidden * Float.BYTES;
        if (hostOut.capacity() < total * rowFloatBytes) {
            hostOut = Dispatcher.ensure(hostOut, total * rowFloatBytes);
            hostOutFloats = hostOut.order(ByteOrder.nativeOrder()).asFloatBuffer();
        }
        hostDispatcher.combine(handle, hostOutFloats);
        final DType dtype = row.dtype();
        final int combineRowBytes = row.combineRowBytes();
        returnSend = Dispatcher.ensure(returnSend, (long) numForwarded * combineRowBytes);
        final MemorySegment sums = views.of(VIEW_HOST_OUT, hostOut);
        dtype.encode(
                sums,
                numTokens * rowFloatBytes,
                views.of(VIEW_RETURN_SEND, returnSend),
                0,
                numForwarded * hidden);
        for (int h = 0; h < forwardRows.length; h++) {
            sendBytes[h] = forwardedRows[h] * combineRowBytes;
            recvBytes[h] = forwardRows[h] * combineRowBytes;
            interHostBytes += sendBytes[h];
        }
        returnRecv =
                Dispatcher.ensure(
                        returnRecv, (long) forwardOffsets[forwardRows.length] * combineRowBytes);
        rail.allToAllV(
                railStep, ExchangePhase.COMBINE, returnSend, sendBytes, returnRecv, recvBytes);
        final MemorySegment dst = views.of(VIEW_OUT, out);
        MemorySegment.copy(sums, 0, dst, 0, numTokens * rowFloatBytes);
        final MemorySegment back = views.of(VIEW_RETURN_RECV, returnRecv);
        for (int i = 0; i < forwardOffsets[forwardRows.length]; i++) {
            dtype.accumulate(
                    back,
                    (long) i * combineRowBytes,
                    dst,
                    forwardTokens[i] * rowFloatBytes,
                    hidden);
        }
    }
}
