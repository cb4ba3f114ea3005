package moe.a2a.protocol;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import moe.a2a.dispatch.Placement;
import moe.a2a.v1.PlacementSpec;
import moe.a2a.v1.RankSlots;
import org.junit.jupiter.api.Test;

class PlacementCodecTest {
    private static final Placement SHUFFLED =
            Placement.of(7, 6, new int[][] {{4, 0}, {5}, {}, {2, 1, 3}});

    @Test
    void shouldDecodeWhatItEncoded() {
        PlacementSpec spec = PlacementCodec.encode(SHUFFLED);
        assertThat(spec.getVersion()).isEqualTo(7);
        assertThat(spec.getRanks(3).getExpertsList()).containsExactly(2, 1, 3);
        Placement back = PlacementCodec.decode(spec, 6, 4);
        assertThat(back.toString()).isEqualTo(SHUFFLED.toString());
        for (int r = 0; r < 4; r++) {
            assertThat(back.expertsOf(r)).isEqualTo(SHUFFLED.expertsOf(r));
        }
    }

    @Test
    void shouldKeepSharesWhenExpertsHaveReplicas() {
        Placement replicated =
                Placement.of(
                        2, 3, new int[][] {{0, 1}, {1, 2}}, new double[][] {{1, 0.7}, {0.3, 1}});
        Placement back = PlacementCodec.decode(PlacementCodec.encode(replicated), 3, 2);
        assertThat(back.replicas(1)).isEqualTo(2);
        assertThat(back.replicaShare(1, 0)).isEqualTo(0.7);
        assertThat(back.replicaShare(1, 1)).isEqualTo(0.3);
        assertThat(back.toString()).isEqualTo(replicated.toString());
    }

    @Test
    void shouldNameFieldWhenPlacementDoesNotFitGroup() {
        PlacementSpec spec = PlacementCodec.encode(SHUFFLED);
        assertThatThrownBy(() -> PlacementCodec.decode(spec, 6, 5))
                .hasMessage("placement.ranks: 4 (expected: 5, the world size)");
        assertThatThrownBy(
                        () -> PlacementCodec.decode(spec.toBuilder().setVersion(0).build(), 6, 4))
                .hasMessage("placement.version: 0 (expected: >= 1)");
        assertThatThrownBy(() -> PlacementCodec.decode(spec, 7, 4))
                .hasMessage(
                        "placement.ranks: expert 6 is in no slot (expected: every expert in one)");
        PlacementSpec bad =
                spec.toBuilder().setRanks(2, RankSlots.newBuilder().addExperts(9)).build();
        assertThatThrownBy(() -> PlacementCodec.decode(bad, 6, 4))
                .hasMessage("placement.ranks[2].experts[0]: 9 (expected: in [0, 6))");
    }
}
