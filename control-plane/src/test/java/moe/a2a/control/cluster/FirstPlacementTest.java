package moe.a2a.control.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import moe.a2a.dispatch.Placement;
import org.junit.jupiter.api.Test;

class FirstPlacementTest {

    @Test
    void shouldBeContiguousWhenNoSlotIsRedundant() {
        assertThat(FirstPlacement.decide(10, 4, 0).toString())
                .isEqualTo(Placement.contiguous(10, 4).toString());
    }

    @Test
    void shouldEvenRanksOutWhenSlotsAreRedundant() {
        Placement p = FirstPlacement.decide(8, 4, 4);
        assertThat(p.version()).isEqualTo(Placement.FIRST_VERSION);
        double[] rankLoad = new double[4];
        int slots = 0;
        for (int r = 0; r < 4; r++) {
            assertThat(p.localExperts(r)).isEqualTo(3);
            double[] shares = p.sharesOf(r);
            for (double share : shares) {
                rankLoad[r] += share;
            }
            slots += shares.length;
        }
        assertThat(slots).isEqualTo(12);
        for (int e = 0; e < 8; e++) {
            double sum = 0;
            for (int i = 0; i < p.replicas(e); i++) {
                sum += p.replicaShare(e, i);
            }
            assertThat(sum).isCloseTo(1.0, within(1e-9));
        }
        // even loads: every rank carries two experts' worth
        for (double v : rankLoad) {
            assertThat(v).isCloseTo(2.0, within(1e-6));
        }
    }

    @Test
    void shouldNameFlagWhenSlotsDoNotDivideOverRanks() {
        assertThatThrownBy(() -> FirstPlacement.decide(8, 4, 3))
                .hasMessage(
                        "--redundant-experts: 3 (expected: experts + redundant a multiple of the"
                                + " world size; experts=8, worldSize=4)");
    }
}
