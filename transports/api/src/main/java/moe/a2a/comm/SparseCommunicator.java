package moe.a2a.comm;

import java.nio.ByteBuffer;
import java.util.Arrays;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import org.jspecify.annotations.Nullable;

/**
 * A group of some of a world's ranks, seen with the world's ranks: the members exchange over a
 * communicator of their own (member {@code i} is world rank {@code ranks[i]}), and the ranks left
 * out take part in nothing: every count to or from them is zero. Lets a cluster that lost a rank
 * keep serving with the rest while placement, layouts and dispatchers keep the world's rank
 * numbers. Per-peer arrays are the world's; segments keep their offsets, since a left-out rank's
 * segment is empty. Owned by the rank's thread, like the communicator it wraps.
 */
public final class SparseCommunicator implements Communicator {
    private static final ByteBuffer EMPTY = ByteBuffer.allocate(0);

    private final Communicator members;
    private final int[] ranks;
    private final int worldSize;
    private final long[] memberSend;
    private final long[] memberRecv;
    private final ByteBuffer[] worldDsts;
    private final long[] worldOffsets;
    private final long[] worldLengths;
    private final ByteBuffer[] worldSegments;
    private SegmentWriter writer;
    private SegmentReader reader;
    private final SegmentWriter memberWriter =
            new SegmentWriter() {
                @Override
                public void write(int peer, ByteBuffer dst, int dstOffset) {
                    writer.write(ranks[peer], dst, dstOffset);
                }

                @Override
                public void writeAll(ByteBuffer[] dsts, long[] dstOffsets, long[] lengths) {
                    Arrays.fill(worldDsts, EMPTY);
                    Arrays.fill(worldOffsets, 0);
                    Arrays.fill(worldLengths, 0);
                    for (int i = 0; i < ranks.length; i++) {
                        worldDsts[ranks[i]] = dsts[i];
                        worldOffsets[ranks[i]] = dstOffsets[i];
                        worldLengths[ranks[i]] = lengths[i];
                    }
                    writer.writeAll(worldDsts, worldOffsets, worldLengths);
                }
            };
    private final SegmentReader memberReader = this::readAsWorld;

    /**
     * @param members the members' own communicator, its rank {@code i} being world rank {@code
     *     ranks[i]}
     * @param ranks the members' world ranks, ascending
     * @throws IllegalArgumentException when {@code ranks} does not fit {@code members} or the world
     */
    public SparseCommunicator(Communicator members, int[] ranks, int worldSize) {
        if (ranks.length != members.size()) {
            throw new IllegalArgumentException(
                    "ranks: "
                            + ranks.length
                            + " (expected: "
                            + members.size()
                            + ", the members' group size)");
        }
        for (int i = 0; i < ranks.length; i++) {
            if (ranks[i] < 0 || ranks[i] >= worldSize || (i > 0 && ranks[i] <= ranks[i - 1])) {
                throw new IllegalArgumentException(
                        "ranks: "
                                + Arrays.toString(ranks)
                                + " (expected: ascending world ranks in [0, "
                                + worldSize
                                + "))");
            }
        }
        this.members = members;
        this.ranks = ranks.clone();
        this.worldSize = worldSize;
        this.memberSend = new long[ranks.length];
        this.memberRecv = new long[ranks.length];
        this.worldDsts = new ByteBuffer[worldSize];
        this.worldOffsets = new long[worldSize];
        this.worldLengths = new long[worldSize];
        this.worldSegments = new ByteBuffer[worldSize];
    }

    @Override
    public int rank() {
        return ranks[members.rank()];
    }

    @Override
    public int size() {
        return worldSize;
    }

    @Override
    public Transport transport() {
        return members.transport();
    }

    @Override
    public void allToAllCounts(
            long step, ExchangePhase phase, long[] sendCounts, long[] recvCounts) {
        toMembers("sendCounts", sendCounts, memberSend);
        members.allToAllCounts(step, phase, memberSend, memberRecv);
        toWorld(memberRecv, recvCounts);
    }

    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        toMembers("sendCounts", sendCounts, memberSend);
        toMembers("recvCounts", recvCounts, memberRecv);
        members.allToAllV(step, phase, send, memberSend, recv, memberRecv);
    }

    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            SegmentWriter writer,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        toMembers("sendCounts", sendCounts, memberSend);
        toMembers("recvCounts", recvCounts, memberRecv);
        this.writer = writer;
        members.allToAllV(step, phase, memberWriter, memberSend, recv, memberRecv);
    }

    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            SegmentReader reader,
            long[] recvCounts) {
        toMembers("sendCounts", sendCounts, memberSend);
        toMembers("recvCounts", recvCounts, memberRecv);
        this.reader = reader;
        members.allToAllV(step, phase, send, memberSend, memberReader, memberRecv);
    }

    /** Between members only: {@code to} and {@code from} are world ranks of members. */
    @Override
    public void sendRecv(
            int to,
            ByteBuffer send,
            int sendOffset,
            int sendBytes,
            int from,
            int recvBytes,
            InboundSink sink) {
        members.sendRecv(
                member("to", to),
                send,
                sendOffset,
                sendBytes,
                member("from", from),
                recvBytes,
                sink);
    }

    /** Over the members only. */
    @Override
    public void allReduce(
            ByteBuffer send,
            ByteBuffer recv,
            int count,
            DType dtype,
            ReduceOp op,
            CollectiveAlgo algo) {
        members.allReduce(send, recv, count, dtype, op, algo);
    }

    /** Over the members only: {@code recv} holds one block per member, in member order. */
    @Override
    public void allGather(ByteBuffer send, ByteBuffer recv, int bytesPerRank) {
        members.allGather(send, recv, bytesPerRank);
    }

    /** Over the members only: {@code send} holds one block per member, in member order. */
    @Override
    public void reduceScatter(
            ByteBuffer send, ByteBuffer recv, int countPerRank, DType dtype, ReduceOp op) {
        members.reduceScatter(send, recv, countPerRank, dtype, op);
    }

    /** Over the members only; {@code root} is a member's world rank. */
    @Override
    public void broadcast(ByteBuffer buf, int bytes, int root, CollectiveAlgo algo) {
        members.broadcast(buf, bytes, member("root", root), algo);
    }

    /** Over the members only: one block per member, in member order. */
    @Override
    public void allToAll(ByteBuffer send, ByteBuffer recv, int bytesPerPeer) {
        members.allToAll(send, recv, bytesPerPeer);
    }

    private int member(String field, int worldRank) {
        if (worldRank == NONE) {
            return NONE;
        }
        int i = Arrays.binarySearch(ranks, worldRank);
        if (i < 0) {
            throw new IllegalArgumentException(
                    field
                            + ": "
                            + worldRank
                            + " (expected: a member, one of "
                            + Arrays.toString(ranks)
                            + ")");
        }
        return i;
    }

    @Override
    public void barrier() {
        members.barrier();
    }

    @Override
    public void abort(Throwable cause) {
        members.abort(cause);
    }

    @Override
    public long @Nullable [] waitedNanos(ExchangePhase phase) {
        long[] byMember = members.waitedNanos(phase);
        if (byMember == null) {
            return null;
        }
        long[] byWorld = new long[worldSize];
        for (int i = 0; i < ranks.length; i++) {
            byWorld[ranks[i]] = byMember[i];
        }
        return byWorld;
    }

    @Override
    public void close() {
        members.close();
    }

    private void readAsWorld(ByteBuffer[] segments, long[] offsets) {
        Arrays.fill(worldSegments, EMPTY);
        Arrays.fill(worldOffsets, 0);
        for (int i = 0; i < ranks.length; i++) {
            worldSegments[ranks[i]] = segments[i];
            worldOffsets[ranks[i]] = offsets[i];
        }
        reader.read(worldSegments, worldOffsets);
    }

    /** The members' world ranks, ascending: member {@code i} is world rank {@code ranks()[i]}. */
    public int[] ranks() {
        return ranks.clone();
    }

    /** The communicator of the members, beneath the world's view. */
    public Communicator members() {
        return members;
    }

    /**
     * The members' entries of {@code world}, a per-peer array of the world's ranks, in {@code out}.
     *
     * @throws A2aException naming {@code name} and the rank when a rank left out of the group has a
     *     count
     */
    public void toMembers(String name, long[] world, long[] out) {
        Segments.checkLength(name, world, worldSize);
        int next = 0;
        for (int r = 0; r < worldSize; r++) {
            if (next < ranks.length && ranks[next] == r) {
                out[next++] = world[r];
            } else if (world[r] != 0) {
                throw new A2aException(
                        name
                                + "["
                                + r
                                + "]: "
                                + world[r]
                                + " (expected: 0; rank "
                                + r
                                + " is not in the group of ranks "
                                + Arrays.toString(ranks)
                                + ")");
            }
        }
    }

    private void toWorld(long[] member, long[] world) {
        Segments.checkLength("recvCounts", world, worldSize);
        Arrays.fill(world, 0);
        for (int i = 0; i < ranks.length; i++) {
            world[ranks[i]] = member[i];
        }
    }
}
