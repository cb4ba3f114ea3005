package moe.a2a.bench;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import moe.a2a.dispatch.CoActivation;
import moe.a2a.dispatch.Placement;
import moe.a2a.dispatch.PlacementPlanner;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;

/**
 * The placement a benchmark run uses: the canonical contiguous one, or, with redundant slots, the
 * planner's for the workload's own expert loads, and on a recorded routing its experts then moved
 * for co-activation ({@link CoActivation}). The same on every rank: it depends on the workload
 * alone. Stateless.
 */
public final class BenchPlacement {
    /** The bench JSON's {@code placement} of the canonical placement. */
    public static final String CONTIGUOUS = "contiguous";

    /** The bench JSON's {@code placement} of the planner's. */
    public static final String PLANNED = "planned";

    /** Swaps {@link CoActivation} tries on a recorded routing. */
    static final long MOVES = 400_000;

    /** A workload (by value; a recorded one by its ids) and its redundant slots. */
    private record Key(BenchWorkload workload, int redundant) {}

    /**
     * Placements already made in this JVM: every rank thread of a run asks for the same one, and
     * planning (with co-activation on a recorded routing, about half a second) is done once.
     */
    private static final Map<Key, Placement> PLACED = new ConcurrentHashMap<>();

    private BenchPlacement() {}

    /** The bench JSON's name of {@link #of}'s placement with {@code redundant} extra slots. */
    public static String label(int redundant) {
        return redundant == 0 ? CONTIGUOUS : PLANNED;
    }

    /**
     * @throws IllegalArgumentException naming {@code --redundant-experts} when experts + redundant
     *     is not a multiple of the workload's ranks
     */
    public static Placement of(BenchWorkload w, int redundant) {
        return PLACED.computeIfAbsent(new Key(w, redundant), k -> place(w, redundant));
    }

    private static Placement place(BenchWorkload w, int redundant) {
        int experts = w.experts();
        int ranks = w.worldSize();
        if (redundant == 0) {
            return Placement.contiguous(experts, ranks);
        }
        if (redundant < 0 || (experts + redundant) % ranks != 0) {
            throw new IllegalArgumentException(
                    "--redundant-experts: "
                            + redundant
                            + " (expected: >= 0, experts + redundant a multiple of the ranks; "
                            + w.name()
                            + ": experts="
                            + experts
                            + ", ranks="
                            + ranks
                            + ")");
        }
        PlacementPlanner.Plan plan =
                PlacementPlanner.plan(
                        BenchRouting.expertLoads(w), ranks, experts + redundant, 1, 1);
        if (w.recorded() != null) {
            plan = CoActivation.refine(plan, experts, ranks, w.recorded(), w.topK(), MOVES);
        }
        return plan.placement(Placement.FIRST_VERSION, experts, ranks);
    }
}
