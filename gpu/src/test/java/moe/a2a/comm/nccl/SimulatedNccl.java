package moe.a2a.comm.nccl;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import moe.a2a.comm.Transport;

/**
 * NCCL simulated in this JVM, groups keyed by unique id (a worker with another id would land in a
 * group of its own); the ranks run on the CPU. Records the ids made, the joins of each, the
 * transports joined and the shrinks. Thread-safe: every worker agent's thread calls it.
 */
public final class SimulatedNccl implements NcclDataPlane.NcclProvider {
    private final Map<NcclUniqueId, FakeNcclGroup> groups = new ConcurrentHashMap<>();
    private final List<Transport> joinedTransports = new ArrayList<>();

    /** Joins of each id, guarded by {@link #joinedTransports}. */
    private final Map<NcclUniqueId, Integer> joins = new HashMap<>();

    private final List<NcclUniqueId> madeIds = new ArrayList<>();
    private final List<List<Integer>> shrinks = new ArrayList<>();

    @Override
    public NcclUniqueId newUniqueId() {
        byte[] id = new byte[NcclUniqueId.BYTES];
        new SplittableRandom(System.nanoTime()).nextBytes(id);
        NcclUniqueId made = NcclUniqueId.of(id, "simulated");
        synchronized (madeIds) {
            madeIds.add(made);
        }
        return made;
    }

    @Override
    public NcclCommunicator join(NcclUniqueId id, int rank, int worldSize, long timeoutNs) {
        synchronized (joinedTransports) {
            NcclCommunicator comm =
                    groups.computeIfAbsent(id, k -> new FakeNcclGroup(worldSize))
                            .communicator(rank, timeoutNs);
            joinedTransports.add(comm.transport());
            joins.merge(id, 1, Integer::sum);
            return comm;
        }
    }

    /** A join, as {@link NcclDataPlane.NcclProvider#join}. */
    @FunctionalInterface
    public interface Join {
        NcclCommunicator join(NcclUniqueId id, int rank, int worldSize, long timeoutNs);
    }

    /**
     * This simulation with its joins made by {@code join} (which may call {@link #join} itself): a
     * test's init that times out, or a rank that sticks once joined.
     */
    public NcclDataPlane.NcclProvider joiningThrough(Join join) {
        SimulatedNccl simulated = this;
        return new NcclDataPlane.NcclProvider() {
            @Override
            public NcclUniqueId newUniqueId() {
                return simulated.newUniqueId();
            }

            @Override
            public NcclCommunicator join(NcclUniqueId id, int rank, int worldSize, long timeoutNs) {
                return join.join(id, rank, worldSize, timeoutNs);
            }

            @Override
            public NcclCommunicator shrink(
                    NcclCommunicator parent, int[] excludedRanks, long timeoutNs) {
                return simulated.shrink(parent, excludedRanks, timeoutNs);
            }

            @Override
            public int device() {
                return simulated.device();
            }
        };
    }

    @Override
    public NcclCommunicator shrink(NcclCommunicator parent, int[] excludedRanks, long timeoutNs) {
        synchronized (shrinks) {
            shrinks.add(Arrays.stream(excludedRanks).boxed().toList());
        }
        return parent.shrink(excludedRanks, timeoutNs);
    }

    /** Fails every rank of every group joined by id ({@link FakeNcclGroup#fail}). */
    public void failJoinedGroups(String text) {
        for (FakeNcclGroup group : groups.values()) {
            group.fail(text);
        }
    }

    /** {@code rank}'s device is stuck in every group joined by id ({@link FakeNcclGroup#stick}). */
    public void stick(int rank) {
        for (FakeNcclGroup group : groups.values()) {
            group.stick(rank);
        }
    }

    /** Whether {@code rank} waits for messages or a collective in any group joined by id. */
    public boolean pending(int rank) {
        return groups.values().stream().anyMatch(g -> g.pending(rank));
    }

    /** The ranks run on the CPU. */
    @Override
    public int device() {
        return -1;
    }

    /** The ids rank 0 made, in order. */
    public List<NcclUniqueId> madeIds() {
        synchronized (madeIds) {
            return List.copyOf(madeIds);
        }
    }

    /**
     * The ids made whose bootstrap root would still wait on a real NCCL: joined by fewer ranks than
     * the first to join named, or by none.
     */
    public List<NcclUniqueId> openRoots() {
        List<NcclUniqueId> made = madeIds();
        synchronized (joinedTransports) {
            return made.stream()
                    .filter(id -> !groups.containsKey(id) || joins.get(id) < groups.get(id).size())
                    .toList();
        }
    }

    /** The ids of the groups ranks joined. */
    public Set<NcclUniqueId> groupIds() {
        return Set.copyOf(groups.keySet());
    }

    /** The transport of each communicator joined, in order. */
    public List<Transport> joinedTransports() {
        synchronized (joinedTransports) {
            return List.copyOf(joinedTransports);
        }
    }

    /** The parent ranks each shrinking rank left out, one list a call, in order. */
    public List<List<Integer>> shrinks() {
        synchronized (shrinks) {
            return List.copyOf(shrinks);
        }
    }
}
