package moe.a2a.dispatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link CoActivation}: on a routing whose experts come in sets chosen together it gathers each
 * set's experts on fewer ranks (fewer rows) while the pairs stay within the bound; it only moves
 * single-slot experts; on routings without that structure it never returns a worse placement.
 */
class CoActivationTest {
    static final int E = 32;
    static final int N = 4;
    static final int K = 4;
    static final int SET = 8;

    /**
     * Each source's tokens pick one of E/SET sets (a seeded permutation scatters each set's members
     * over the contiguous ranks), then K distinct experts, each from the set with probability 0.9.
     */
    static int[][] coActivated(long seed, int tokens) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int[] perm = new int[E];
        for (int i = 0; i < E; i++) {
            perm[i] = i;
        }
        for (int i = E - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
        int[][] ids = new int[N][tokens * K];
        for (int src = 0; src < N; src++) {
            for (int t = 0; t < tokens; t++) {
                int set = Math.min(rnd.nextInt(E / SET), rnd.nextInt(E / SET));
                for (int k = 0; k < K; k++) {
                    int e;
                    do {
                        e =
                                rnd.nextDouble() < 0.9
                                        ? perm[set * SET + rnd.nextInt(SET)]
                                        : rnd.nextInt(E);
                    } while (contains(ids[src], t * K, k, e));
                    ids[src][t * K + k] = e;
                }
            }
        }
        return ids;
    }

    static double[] loads(int[][] ids) {
        double[] loads = new double[E];
        for (int[] src : ids) {
            for (int e : src) {
                loads[e]++;
            }
        }
        return loads;
    }

    @Test
    void shouldGatherExpertsChosenTogetherWithinTheBalanceBound() {
        for (long seed : new long[] {1, 2, 3}) {
            int[][] ids = coActivated(seed, 300);
            PlacementPlanner.Plan plan = PlacementPlanner.plan(loads(ids), N, E + N, 1, 1);
            PlacementPlanner.Plan refined = CoActivation.refine(plan, E, N, ids, K, 200_000);
            RoutingCost before = CoActivation.cost(plan, E, N, ids, K);
            RoutingCost after = CoActivation.cost(refined, E, N, ids, K);
            RoutingCost contiguous = cost(Placement.contiguous(E, N), ids);
            String where = "seed " + seed;
            assertThat(after.rowsTotal())
                    .as(
                            where + ": rows, planned %d, contiguous %d",
                            before.rowsTotal(),
                            contiguous.rowsTotal())
                    .isLessThan((long) (0.8 * before.rowsTotal()))
                    .isLessThan((long) (0.8 * contiguous.rowsTotal()));
            assertThat(after.pairsMaxOverMean())
                    .as(where + ": pairs max/mean")
                    .isLessThanOrEqualTo(
                            Math.max(1 + CoActivation.SLACK, before.pairsMaxOverMean()));
            assertSameSlotsMoved(plan, refined);
            assertThat(CoActivation.refine(plan, E, N, ids, K, 200_000).slotExpert())
                    .as(where + ": the same routing, the same placement")
                    .containsExactly(refined.slotExpert());
        }
    }

    @Test
    void shouldNeverReturnMoreRowsOrWorseBalanceOnIndependentRoutings() {
        SplittableRandom random = new SplittableRandom(8);
        for (int trial = 0; trial < 4; trial++) {
            int[][] ids = new int[N][];
            for (int src = 0; src < N; src++) {
                ids[src] = TestRoutings.uniform(random, 200, E, K);
            }
            PlacementPlanner.Plan plan = PlacementPlanner.plan(loads(ids), N, E + 2 * N, 1, 1);
            PlacementPlanner.Plan refined = CoActivation.refine(plan, E, N, ids, K, 50_000);
            RoutingCost before = CoActivation.cost(plan, E, N, ids, K);
            RoutingCost after = CoActivation.cost(refined, E, N, ids, K);
            assertThat(after.rowsTotal())
                    .as("trial " + trial)
                    .isLessThanOrEqualTo(before.rowsTotal());
            assertThat(after.pairsMaxOverMean())
                    .as("trial " + trial)
                    .isLessThanOrEqualTo(
                            Math.max(1 + CoActivation.SLACK, before.pairsMaxOverMean()));
            assertSameSlotsMoved(plan, refined);
        }
    }

    /** Replicated experts keep their slots and shares; single-slot experts only change places. */
    private static void assertSameSlotsMoved(
            PlacementPlanner.Plan plan, PlacementPlanner.Plan refined) {
        int[] replicas = new int[E];
        for (int e : plan.slotExpert()) {
            replicas[e]++;
        }
        List<Integer> singles = new ArrayList<>();
        List<Integer> singlesAfter = new ArrayList<>();
        for (int s = 0; s < plan.slotExpert().length; s++) {
            int e = plan.slotExpert()[s];
            if (replicas[e] > 1) {
                assertThat(refined.slotExpert()[s]).as("slot " + s).isEqualTo(e);
            } else {
                singles.add(e);
                singlesAfter.add(refined.slotExpert()[s]);
            }
            assertThat(refined.share()[s]).as("share of slot " + s).isEqualTo(plan.share()[s]);
        }
        assertThat(singlesAfter).containsExactlyInAnyOrderElementsOf(singles);
    }

    private static RoutingCost cost(Placement placement, int[][] ids) {
        DispatchLayout[] layouts = new DispatchLayout[N];
        for (int src = 0; src < N; src++) {
            layouts[src] = new DispatchLayout(placement, src);
            layouts[src].compute(ids[src], ids[src].length / K, K);
        }
        return RoutingCost.of(layouts);
    }

    private static boolean contains(int[] ids, int from, int count, int e) {
        for (int i = 0; i < count; i++) {
            if (ids[from + i] == e) {
                return true;
            }
        }
        return false;
    }
}
