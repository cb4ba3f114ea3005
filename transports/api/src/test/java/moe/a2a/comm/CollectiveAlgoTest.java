package moe.a2a.comm;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class CollectiveAlgoTest {
    @Test
    void shouldTakeTheTreeUpToTheMeasuredCrossoverAndWithTwoRanks() {
        assertThat(CollectiveAlgo.AUTO.resolve(8, 4)).isEqualTo(CollectiveAlgo.TREE);
        assertThat(CollectiveAlgo.AUTO.resolve(256 << 10, 4)).isEqualTo(CollectiveAlgo.TREE);
        assertThat(CollectiveAlgo.AUTO.resolve((256 << 10) + 4, 4)).isEqualTo(CollectiveAlgo.RING);
        assertThat(CollectiveAlgo.AUTO.resolve(64 << 20, 2)).isEqualTo(CollectiveAlgo.TREE);
        assertThat(CollectiveAlgo.RING.resolve(8, 4)).isEqualTo(CollectiveAlgo.RING);
        assertThat(CollectiveAlgo.TREE.resolve(64 << 20, 8)).isEqualTo(CollectiveAlgo.TREE);
    }

    @Test
    void shouldBroadcastByTheTreeUnlessTheChainIsAskedFor() {
        assertThat(CollectiveAlgo.AUTO.resolveBroadcast()).isEqualTo(CollectiveAlgo.TREE);
        assertThat(CollectiveAlgo.TREE.resolveBroadcast()).isEqualTo(CollectiveAlgo.TREE);
        assertThat(CollectiveAlgo.RING.resolveBroadcast()).isEqualTo(CollectiveAlgo.RING);
    }
}
