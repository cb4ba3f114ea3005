package moe.a2a.dispatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class PlacementMoveTest {

    @Test
    void shouldOnlyRelabelRanksAndKeepAtLeastAsManyExpertsInPlace() {
        for (long seed = 0; seed < 200; seed++) {
            SplittableRandom random = new SplittableRandom(seed);
            int n = 1 + random.nextInt(8);
            int e = 2 + random.nextInt(30);
            int slots = n * ((e + n - 1) / n + random.nextInt(3));
            Placement current = planned(random, e, n, slots, 4);
            Placement next = planned(random, e, n, slots, 9);
            Placement aligned = PlacementMove.aligned(current, next, 5);
            String where = "seed=" + seed;

            assertThat(aligned.version()).as(where).isEqualTo(5);
            // the same ranks' contents, in another rank order: the same experts, the same loads
            double[] loads = new double[e];
            for (int x = 0; x < e; x++) {
                loads[x] = random.nextDouble(1, 10);
            }
            String[] nextRanks = new String[n];
            String[] alignedRanks = new String[n];
            for (int r = 0; r < n; r++) {
                nextRanks[r] = Arrays.toString(next.expertsOf(r));
                alignedRanks[r] = Arrays.toString(aligned.expertsOf(r));
            }
            Arrays.sort(nextRanks);
            Arrays.sort(alignedRanks);
            assertThat(alignedRanks).as(where).isEqualTo(nextRanks);
            double[] nextLoads = next.rankLoads(loads);
            double[] alignedLoads = aligned.rankLoads(loads);
            Arrays.sort(nextLoads);
            Arrays.sort(alignedLoads);
            for (int r = 0; r < n; r++) {
                assertThat(alignedLoads[r]).as(where).isCloseTo(nextLoads[r], within(1e-9));
            }

            int loadsAligned = 0;
            int loadsAsPlanned = 0;
            for (int r = 0; r < n; r++) {
                int[] fresh = PlacementMove.newExperts(current, aligned, r);
                assertThat(fresh).as(where).isEqualTo(bruteNew(current, aligned, r));
                loadsAligned += fresh.length;
                loadsAsPlanned += PlacementMove.newExperts(current, next, r).length;
            }
            assertThat(loadsAligned).as(where).isLessThanOrEqualTo(loadsAsPlanned);
        }
    }

    @Test
    void shouldLoadNothingWhenTheNextPlacementIsTheCurrentOneWithRanksShuffled() {
        Placement current = Placement.of(1, 6, new int[][] {{0, 1, 2}, {3, 4, 0}, {5, 1, 2}});
        Placement shuffled = Placement.of(2, 6, new int[][] {{5, 1, 2}, {0, 1, 2}, {3, 4, 0}});
        Placement aligned = PlacementMove.aligned(current, shuffled, 2);
        for (int r = 0; r < 3; r++) {
            assertThat(PlacementMove.newExperts(current, aligned, r)).isEmpty();
        }
        assertThat(aligned.sameSlots(current)).isTrue();
    }

    /** Distinct experts of {@code rank} under {@code next} that it lacks under {@code current}. */
    private static int[] bruteNew(Placement current, Placement next, int rank) {
        boolean[] had = new boolean[current.numExperts()];
        for (int x : current.expertsOf(rank)) {
            had[x] = true;
        }
        boolean[] wanted = new boolean[next.numExperts()];
        for (int x : next.expertsOf(rank)) {
            wanted[x] = !had[x];
        }
        int count = 0;
        for (boolean w : wanted) {
            count += w ? 1 : 0;
        }
        int[] out = new int[count];
        int i = 0;
        for (int x = 0; x < wanted.length; x++) {
            if (wanted[x]) {
                out[i++] = x;
            }
        }
        return out;
    }

    private static Placement planned(
            SplittableRandom random, int experts, int ranks, int slots, long version) {
        double[] loads = new double[experts];
        for (int x = 0; x < experts; x++) {
            loads[x] = Math.exp(random.nextGaussian());
        }
        return PlacementPlanner.plan(loads, ranks, slots, 1, 1).placement(version, experts, ranks);
    }
}
