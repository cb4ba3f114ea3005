package moe.a2a.control.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.List;
import moe.a2a.v1.NcclParent;
import moe.a2a.v1.NcclShrink;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/** The control plane's one decision between ncclCommShrink and a fresh unique id. */
class NcclShrinkDecisionTest {
    @Test
    void shouldShrinkWithoutTheRanksLeftOutWhenMembersShareTheirParent() {
        NcclShrink shrink =
                NcclShrinkDecision.decide(members(parent(7, 0), parent(7, 2), parent(7, 3)));
        assertThat(shrink).isNotNull();
        assertThat(shrink.getParentEpoch()).isEqualTo(7);
        assertThat(shrink.getExcludedRanksList()).containsExactly(1);
    }

    @Test
    void shouldShrinkWithoutRankZeroWhenItIsTheOneLost() {
        NcclShrink shrink = NcclShrinkDecision.decide(members(parent(7, 1), parent(7, 3)));
        assertThat(shrink).isNotNull();
        assertThat(shrink.getExcludedRanksList()).containsExactly(0, 2);
    }

    @Test
    void shouldInitAfreshWhenMembersAreInAnotherOrder() {
        assertThat(NcclShrinkDecision.decide(members(parent(7, 2), parent(7, 0), parent(7, 3))))
                .isNull();
    }

    @Test
    void shouldInitAfreshWhenTheGroupGrowsOrKeepsEveryRank() {
        assertThat(
                        NcclShrinkDecision.decide(
                                members(parent(7, 0), parent(7, 1), parent(7, 2), parent(7, 3))))
                .as("every rank of the parent")
                .isNull();
        assertThat(
                        NcclShrinkDecision.decide(
                                members(
                                        parent(7, 0),
                                        parent(7, 1),
                                        parent(7, 2),
                                        parent(7, 3),
                                        null)))
                .as("a member more")
                .isNull();
    }

    @Test
    void shouldInitAfreshWhenAMemberHoldsNoParent() {
        assertThat(NcclShrinkDecision.decide(members(parent(7, 0), null, parent(7, 3)))).isNull();
        assertThat(NcclShrinkDecision.decide(members(null, parent(7, 1)))).isNull();
    }

    @Test
    void shouldInitAfreshWhenParentsAreOfDifferentEpochsOrGroups() {
        assertThat(NcclShrinkDecision.decide(members(parent(7, 0), parent(6, 2)))).isNull();
        assertThat(
                        NcclShrinkDecision.decide(
                                members(
                                        parent(7, 0),
                                        parent(7, 2).toBuilder().setGroupId(99).build())))
                .as("the same epoch under another control plane")
                .isNull();
        assertThat(
                        NcclShrinkDecision.decide(
                                members(parent(7, 0), parent(7, 2).toBuilder().setSize(5).build())))
                .as("another size")
                .isNull();
    }

    /** Rank {@code rank} of the 4-rank communicator of epoch {@code epoch}. */
    private static NcclParent parent(long epoch, int rank) {
        return NcclParent.newBuilder()
                .setEpoch(epoch)
                .setGroupId(1000 + epoch)
                .setRank(rank)
                .setSize(4)
                .build();
    }

    private static List<@Nullable NcclParent> members(@Nullable NcclParent... parents) {
        return Arrays.asList(parents);
    }
}
