package moe.a2a.dispatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class RoutingCostTest {

    @Test
    void shouldMatchBruteForceCountsWhenRoutingAndReplicasAreRandom() {
        for (long seed = 0; seed < 200; seed++) {
            SplittableRandom random = new SplittableRandom(seed);
            int n = 1 + random.nextInt(8);
            int e = n * (1 + random.nextInt(6));
            int k = 1 + random.nextInt(Math.min(e, 6));
            int t = random.nextInt(48);
            Placement placement = randomPlacement(random, e, n);
            DispatchLayout[] layouts = new DispatchLayout[n];
            int[][] ids = new int[n][];
            for (int src = 0; src < n; src++) {
                ids[src] = TestRoutings.uniform(random, t, e, k);
                layouts[src] = new DispatchLayout(placement, src);
                layouts[src].compute(ids[src], t, k);
            }

            RoutingCost cost = RoutingCost.of(layouts);

            // brute force, from each assignment's chosen rank alone
            long[] pairs = new long[n];
            long[] rows = new long[n];
            long[] remote = new long[n];
            for (int src = 0; src < n; src++) {
                for (int tok = 0; tok < t; tok++) {
                    boolean[] visits = new boolean[n];
                    for (int j = 0; j < k; j++) {
                        int dst = layouts[src].chosenRank(tok * k + j);
                        pairs[dst]++;
                        visits[dst] = true;
                    }
                    for (int dst = 0; dst < n; dst++) {
                        rows[dst] += visits[dst] ? 1 : 0;
                        remote[dst] += visits[dst] && dst != src ? 1 : 0;
                    }
                }
            }
            String where = "seed=" + seed + " N=" + n + " E=" + e + " K=" + k + " T=" + t;
            long rowsTotal = 0;
            long remoteTotal = 0;
            long rowsMax = 0;
            long pairsMax = 0;
            long pairsTotal = 0;
            for (int r = 0; r < n; r++) {
                assertThat(cost.pairs(r)).as(where).isEqualTo(pairs[r]);
                assertThat(cost.rowsRecv(r)).as(where).isEqualTo(rows[r]);
                assertThat(cost.rowsRemoteRecv(r)).as(where).isEqualTo(remote[r]);
                rowsTotal += rows[r];
                remoteTotal += remote[r];
                rowsMax = Math.max(rowsMax, rows[r]);
                pairsMax = Math.max(pairsMax, pairs[r]);
                pairsTotal += pairs[r];
            }
            assertThat(cost.rowsTotal()).as(where).isEqualTo(rowsTotal);
            assertThat(cost.rowsRemoteTotal()).as(where).isEqualTo(remoteTotal);
            assertThat(cost.rowsRecvMax()).as(where).isEqualTo(rowsMax);
            assertThat(pairsTotal).as(where).isEqualTo((long) n * t * k);
            assertThat(cost.pairsMaxOverMean())
                    .as(where)
                    .isEqualTo(pairsTotal == 0 ? 0 : pairsMax * (double) n / pairsTotal);
            assertThat(cost.rowsRecvMaxOverMean())
                    .as(where)
                    .isEqualTo(rowsTotal == 0 ? 0 : rowsMax * (double) n / rowsTotal);
        }
    }

    @Test
    void shouldNameTheMismatchWhenSourcesDisagree() {
        assertThatThrownBy(() -> RoutingCost.of(new long[2][2], new long[3][2]))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("pairs: 3 source ranks");
        assertThatThrownBy(() -> RoutingCost.of(new long[][] {{1, 2}, {3}}, new long[2][2]))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("source rank 1");
    }

    /** Every expert once, in random slots, plus up to one redundant slot per rank. */
    private static Placement randomPlacement(SplittableRandom random, int e, int n) {
        int redundant = random.nextInt(2) * n;
        double[] loads = new double[e];
        for (int i = 0; i < e; i++) {
            loads[i] = random.nextInt(100);
        }
        return PlacementPlanner.plan(loads, n, e + redundant, 1, 1)
                .placement(Placement.FIRST_VERSION, e, n);
    }
}
