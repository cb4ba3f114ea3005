package moe.a2a.control.cluster;

import java.util.Arrays;
import java.util.stream.IntStream;
import moe.a2a.comm.A2aException;
import org.jspecify.annotations.Nullable;

/**
 * Whether the rank group serves, why not when it does not, and which ranks the current epoch's
 * group spans: the state every piece of {@link RemoteCluster} reads before it sends work. Not
 * thread-safe: guarded by {@link RemoteCluster}'s lock.
 */
final class ServingState {
    private final int worldSize;
    private boolean serving;
    private String notServingReason;

    /** The ranks of the current epoch's group, ascending: every rank unless degraded. */
    private int[] groupRanks;

    ServingState(int worldSize) {
        this.worldSize = worldSize;
        this.notServingReason = "waiting for " + worldSize + " workers to join";
        this.groupRanks = IntStream.range(0, worldSize).toArray();
    }

    /** Why work cannot be sent now, or null while the group serves. */
    @Nullable A2aException refusal() {
        return serving ? null : new A2aException("cluster not serving: " + notServingReason);
    }

    boolean serving() {
        return serving;
    }

    /** Why the group does not serve; empty while it does. */
    String reason() {
        return serving ? "" : notServingReason;
    }

    /** Every member of the epoch's group is ready. */
    void serve() {
        serving = true;
    }

    /** The group broke for {@code reason}. */
    void stop(String reason) {
        serving = false;
        notServingReason = reason;
    }

    /** The cluster is closing; the last reason stays. */
    void halt() {
        serving = false;
    }

    /** The epoch now forming spans {@code ranks} (ascending). */
    void formWith(int[] ranks) {
        groupRanks = ranks.clone();
    }

    /** The ranks of the current epoch's group, ascending; a copy. */
    int[] groupRanks() {
        return groupRanks.clone();
    }

    int groupSize() {
        return groupRanks.length;
    }

    boolean inGroup(int rank) {
        return Arrays.binarySearch(groupRanks, rank) >= 0;
    }

    /** Ranks the serving group does without; 0 while whole or not serving. */
    int degradedRanks() {
        return serving ? worldSize - groupRanks.length : 0;
    }
}
