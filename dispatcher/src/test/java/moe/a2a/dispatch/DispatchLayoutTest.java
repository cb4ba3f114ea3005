package moe.a2a.dispatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class DispatchLayoutTest {

    @Test
    void shouldMatchBruteForceCountsWhenRoutingIsRandom() {
        for (long seed = 0; seed < 300; seed++) {
            SplittableRandom random = new SplittableRandom(seed);
            int n = 1 + random.nextInt(8);
            int e = 1 + random.nextInt(40);
            int k = 1 + random.nextInt(Math.min(e, 8));
            int t = random.nextInt(64);
            int[] ids =
                    random.nextInt(5) == 0
                            ? TestRoutings.concentrated(t, k, random.nextInt(e - k + 1))
                            : TestRoutings.uniform(random, t, e, k);
            Placement placement = Placement.contiguous(e, n);
            DispatchLayout layout = new DispatchLayout(placement, 0);
            // compute twice with a larger step in between: reuse must not leak state
            layout.compute(TestRoutings.uniform(random, 70, e, k), 70, k);
            layout.compute(ids, t, k);

            String where = "seed=" + seed + " N=" + n + " E=" + e + " K=" + k + " T=" + t;
            int offset = 0;
            for (int r = 0; r < n; r++) {
                List<Integer> expected = new ArrayList<>();
                for (int tok = 0; tok < t; tok++) {
                    boolean any = false;
                    for (int j = 0; j < k; j++) {
                        int expert = ids[tok * k + j];
                        // brute force: contiguous blocks of E/N experts, computed independently
                        int owner = -1;
                        for (int rr = 0; rr < n; rr++) {
                            if (expert >= rr * e / n && expert < (rr + 1) * e / n) {
                                owner = rr;
                            }
                        }
                        any |= owner == r;
                    }
                    if (any) {
                        expected.add(tok);
                    }
                    assertThat(layout.tokenInRank(tok, r)).as(where).isEqualTo(any);
                }
                assertThat(layout.tokensPerRank(r)).as(where).isEqualTo(expected.size());
                assertThat(layout.rankOffsets(r)).as(where).isEqualTo(offset);
                for (int i = 0; i < expected.size(); i++) {
                    assertThat(layout.packOrder(offset + i)).as(where).isEqualTo(expected.get(i));
                }
                offset += expected.size();
            }
            assertThat(layout.rankOffsets(n)).as(where).isEqualTo(offset);
            for (int x = 0; x < e; x++) {
                long count = 0;
                for (int id : ids) {
                    count += id == x ? 1 : 0;
                }
                assertThat(layout.tokensPerExpert(x)).as(where).isEqualTo(count);
            }
        }
    }

    /** Expert 0 on ranks 1, 2 and 3 with shares 1/2, 1/3, 1/6; expert 1 on rank 0 only. */
    private static final Placement REPLICATED =
            Placement.of(
                    4, 2, new int[][] {{1}, {0}, {0}, {0}}, new double[][] {{1}, {3}, {2}, {1}});

    @Test
    void shouldSpreadByShareWhenHomeRankHasNoReplica() {
        DispatchLayout layout = new DispatchLayout(REPLICATED, 0);
        int tokens = 600;
        int[] ids = new int[tokens];
        layout.compute(ids, tokens, 1);
        int[] perRank = new int[4];
        for (int i = 0; i < tokens; i++) {
            perRank[layout.chosenRank(i)]++;
            assertThat(layout.chosenSlot(i)).isZero();
        }
        // in proportion to the shares, to within one assignment at any point of the step
        assertThat(perRank).containsExactly(0, 300, 200, 100);
        DispatchLayout again = new DispatchLayout(REPLICATED, 0);
        again.compute(ids, tokens, 1);
        for (int i = 0; i < tokens; i++) {
            assertThat(again.chosenRank(i))
                    .as("the same input routes the same way")
                    .isEqualTo(layout.chosenRank(i));
        }
        int[] prefix = new int[4];
        for (int i = 0; i < tokens; i++) {
            prefix[layout.chosenRank(i)]++;
            assertThat(Math.abs(prefix[1] - (i + 1) / 2.0)).isLessThanOrEqualTo(1.0);
            assertThat(Math.abs(prefix[3] - (i + 1) / 6.0)).isLessThanOrEqualTo(1.0);
        }
    }

    @Test
    void shouldKeepTokensHomeWhenHomeRankHasReplica() {
        DispatchLayout layout = new DispatchLayout(REPLICATED, 2);
        int[] ids = {0, 1, 0, 1, 0};
        layout.compute(ids, 5, 1);
        for (int i = 0; i < 5; i++) {
            assertThat(layout.chosenRank(i)).isEqualTo(ids[i] == 0 ? 2 : 0);
        }
        assertThat(layout.tokensPerRank(2)).isEqualTo(3);
        assertThat(layout.tokensPerRank(1)).isZero();
    }

    @Test
    void shouldRouteAsAFreshLayoutWhenSwitchedToAnotherPlacement() {
        for (long seed = 0; seed < 100; seed++) {
            SplittableRandom random = new SplittableRandom(seed);
            int n = 1 + random.nextInt(6);
            int e = 2 + random.nextInt(20);
            int k = 1 + random.nextInt(Math.min(e, 4));
            int slots = n * ((e + n - 1) / n + random.nextInt(3));
            Placement before = planned(random, e, n, slots, 1);
            Placement after = planned(random, e, n, slots, 2);
            int home = random.nextInt(n);
            int t = random.nextInt(50);
            int[] ids = TestRoutings.uniform(random, t, e, k);

            DispatchLayout switched = new DispatchLayout(before, home);
            switched.compute(TestRoutings.uniform(random, 30, e, k), 30, k);
            switched.use(after);
            switched.compute(ids, t, k);
            DispatchLayout fresh = new DispatchLayout(after, home);
            fresh.compute(ids, t, k);

            String where = "seed=" + seed;
            for (int i = 0; i < t * k; i++) {
                assertThat(switched.chosenRank(i)).as(where).isEqualTo(fresh.chosenRank(i));
                assertThat(switched.chosenSlot(i)).as(where).isEqualTo(fresh.chosenSlot(i));
            }
            assertThat(switched.tokensPerRankCopy()).as(where).isEqualTo(fresh.tokensPerRankCopy());
        }
    }

    @Test
    void shouldRefuseAPlacementOfAnotherWorldSize() {
        DispatchLayout layout = new DispatchLayout(Placement.contiguous(8, 4), 0);
        assertThatThrownBy(() -> layout.use(Placement.contiguous(8, 2)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(
                        "placement: 2 ranks, 8 experts (expected: 4 ranks, 8 experts, as before)");
    }

    private static Placement planned(
            SplittableRandom random, int experts, int ranks, int slots, long version) {
        double[] loads = new double[experts];
        for (int x = 0; x < experts; x++) {
            loads[x] = random.nextDouble(0.5, 50);
        }
        return PlacementPlanner.plan(loads, ranks, slots, 1, 1).placement(version, experts, ranks);
    }
}
