package moe.a2a.dispatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class PlacementTest {

    @Test
    void shouldMapEveryExpertToItsSlotWhenGivenRandomSlots() {
        for (long seed = 0; seed < 50; seed++) {
            SplittableRandom random = new SplittableRandom(seed);
            int experts = random.nextInt(1, 40);
            int ranks = random.nextInt(1, 9);
            int[][] rankExperts = randomSlots(random, experts, ranks);
            Placement p = Placement.of(seed + 1, experts, rankExperts);
            assertThat(p.version()).isEqualTo(seed + 1);
            assertThat(p.worldSize()).isEqualTo(ranks);
            for (int r = 0; r < ranks; r++) {
                assertThat(p.expertsOf(r)).as("seed=%d rank=%d", seed, r).isEqualTo(rankExperts[r]);
                assertThat(p.localExperts(r)).isEqualTo(rankExperts[r].length);
                for (int s = 0; s < rankExperts[r].length; s++) {
                    int e = rankExperts[r][s];
                    assertThat(p.replicas(e)).isEqualTo(1);
                    assertThat(p.replicaRank(e, 0)).isEqualTo(r);
                    assertThat(p.replicaSlot(e, 0)).isEqualTo(s);
                    assertThat(p.replicaShare(e, 0)).isEqualTo(1.0);
                    assertThat(p.expertAt(r, s)).isEqualTo(e);
                }
            }
        }
    }

    @Test
    void shouldBeFirstVersionWhenContiguous() {
        Placement p = Placement.contiguous(10, 4);
        assertThat(p.version()).isEqualTo(Placement.FIRST_VERSION);
        assertThat(p.expertsOf(0)).containsExactly(0, 1);
        assertThat(p.expertsOf(3)).containsExactly(7, 8, 9);
        int[][] same = new int[4][];
        for (int r = 0; r < 4; r++) {
            same[r] = p.expertsOf(r);
        }
        assertThat(Placement.of(1, 10, same).toString()).isEqualTo(p.toString());
    }

    @Test
    void shouldNameSlotWhenExpertIsOutOfRange() {
        assertThatThrownBy(() -> Placement.of(1, 4, new int[][] {{0, 1}, {2, 4}}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("ranks[1].experts[1]: 4 (expected: in [0, 4))");
    }

    @Test
    void shouldSplitSharesEvenlyWhenExpertHasReplicas() {
        Placement p = Placement.of(2, 3, new int[][] {{0, 1}, {2, 1}});
        assertThat(p.replicas(1)).isEqualTo(2);
        assertThat(p.replicaRank(1, 0)).isZero();
        assertThat(p.replicaSlot(1, 0)).isEqualTo(1);
        assertThat(p.replicaRank(1, 1)).isEqualTo(1);
        assertThat(p.replicaSlot(1, 1)).isEqualTo(1);
        assertThat(p.replicaShare(1, 0)).isEqualTo(0.5);
        assertThat(p.sharesOf(1)).containsExactly(1.0, 0.5);
    }

    @Test
    void shouldScaleSharesToOnePerExpert() {
        Placement p = Placement.of(2, 2, new int[][] {{0, 1}, {1}}, new double[][] {{5, 3}, {1}});
        assertThat(p.replicaShare(0, 0)).isEqualTo(1.0);
        assertThat(p.replicaShare(1, 0)).isEqualTo(0.75);
        assertThat(p.replicaShare(1, 1)).isEqualTo(0.25);
        assertThatThrownBy(
                        () ->
                                Placement.of(
                                        2,
                                        2,
                                        new int[][] {{0, 1}, {1}},
                                        new double[][] {{1, 0}, {0}}))
                .hasMessage("shares: expert 1 has shares adding up to 0 (expected: > 0)");
        assertThatThrownBy(
                        () ->
                                Placement.of(
                                        2,
                                        2,
                                        new int[][] {{0, 1}, {1}},
                                        new double[][] {{1, -1}, {2}}))
                .hasMessage("ranks[0].shares[1]: -1.0 (expected: finite, >= 0)");
    }

    @Test
    void shouldNameExpertInNoSlot() {
        assertThatThrownBy(() -> Placement.of(1, 4, new int[][] {{0, 1}, {3}}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("ranks: expert 2 is in no slot (expected: every expert in one)");
    }

    /** A random permutation of the experts cut into {@code ranks} runs of random lengths. */
    @Test
    void shouldGiveALostRanksSharesToItsExpertsOtherReplicas() {
        Placement p =
                Placement.of(
                        3,
                        4,
                        new int[][] {{0, 1}, {0, 2}, {3, 2}},
                        new double[][] {{0.25, 1}, {0.75, 0.4}, {1, 0.6}});
        Placement without = p.without(new boolean[] {false, true, false}, 4);

        assertThat(without.version()).isEqualTo(4);
        assertThat(without.expertsOf(1)).as("slots keep their experts").containsExactly(0, 2);
        assertThat(without.sharesOf(1)).containsExactly(0, 0);
        assertThat(without.sharesOf(0)).containsExactly(1, 1);
        assertThat(without.sharesOf(2)).containsExactly(1, 1);
        // the live ranks route nothing to the lost one, whichever experts their tokens choose
        for (int home : new int[] {0, 2}) {
            DispatchLayout layout = new DispatchLayout(without, home);
            int[] ids = TestRoutings.uniform(new java.util.SplittableRandom(home), 200, 4, 2);
            layout.compute(ids, 200, 2);
            assertThat(layout.tokensPerRank(1)).as("home %d", home).isZero();
            assertThat(layout.pairsPerRank(1)).as("home %d", home).isZero();
        }
    }

    @Test
    void shouldShareEvenlyWhenTheKeptReplicasHadNoShare() {
        Placement p =
                Placement.of(
                        1,
                        2,
                        new int[][] {{0, 1}, {0, 1}, {1, 0}},
                        new double[][] {{1, 1}, {0, 0}, {0, 0}});
        Placement without = p.without(new boolean[] {true, false, false}, 2);

        assertThat(without.sharesOf(1)).containsExactly(0.5, 0.5);
        assertThat(without.sharesOf(2)).containsExactly(0.5, 0.5);
    }

    @Test
    void shouldHaveNoPlacementWithoutARankThatAloneHostsAnExpert() {
        Placement p = Placement.contiguous(4, 2);
        assertThat(p.without(new boolean[] {false, true}, 2)).isNull();
        assertThat(p.without(new boolean[] {false, false}, 2).sameSlots(p)).isTrue();
    }

    private static int[][] randomSlots(SplittableRandom random, int experts, int ranks) {
        int[] perm = new int[experts];
        for (int e = 0; e < experts; e++) {
            int j = random.nextInt(e + 1);
            perm[e] = perm[j];
            perm[j] = e;
        }
        int[] cuts = new int[ranks + 1];
        cuts[ranks] = experts;
        for (int r = 1; r < ranks; r++) {
            cuts[r] = random.nextInt(experts + 1);
        }
        Arrays.sort(cuts, 1, ranks);
        int[][] out = new int[ranks][];
        for (int r = 0; r < ranks; r++) {
            out[r] = Arrays.copyOfRange(perm, cuts[r], cuts[r + 1]);
        }
        return out;
    }
}
