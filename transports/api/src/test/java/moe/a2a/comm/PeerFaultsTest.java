package moe.a2a.comm;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class PeerFaultsTest {
    @Test
    void shouldNameThePeerATimeoutWaitedForOrThatCouldNotBeReached() {
        assertThat(
                        PeerFaults.peerOf(
                                new ExchangeTimeoutException(3, ExchangePhase.COMBINE, 1, 2, 10),
                                1))
                .isEqualTo(2);
        assertThat(PeerFaults.peerOf(PeerFailedException.unreachable(0, 3, "refused"), 0))
                .isEqualTo(3);
        A2aException wrapped =
                new A2aException(
                        "step failed",
                        new ExchangeTimeoutException(-1, ExchangePhase.DISPATCH, 2, 0, 10));
        assertThat(PeerFaults.peerOf(wrapped, 2)).as("found through the causes").isEqualTo(0);
    }

    @Test
    void shouldNameNoPeerForAnEchoOrAnotherRanksFailure() {
        assertThat(PeerFaults.peerOf(new PeerFailedException(1, 2, "connection closed"), 1))
                .as("a peer that closed its connection aborted for a failure of its own")
                .isEqualTo(PeerFaults.NONE);
        assertThat(
                        PeerFaults.peerOf(
                                new PeerFailedException(
                                        0,
                                        new ExchangeTimeoutException(
                                                4, ExchangePhase.DISPATCH, 1, 2, 10)),
                                0))
                .as("rank 1's timeout on rank 2, relayed to rank 0")
                .isEqualTo(PeerFaults.NONE);
        assertThat(PeerFaults.peerOf(new A2aException("no room"), 0)).isEqualTo(PeerFaults.NONE);
    }

    @Test
    void shouldTellAWaitPastTheDeadlineWhetherOrNotItNamesThePeer() {
        ExchangeTimeoutException unnamed = ExchangeTimeoutException.joining(0, 10);
        assertThat(PeerFaults.peerOf(unnamed, 0)).isEqualTo(PeerFaults.NONE);
        assertThat(PeerFaults.timedOut(unnamed)).isTrue();
        assertThat(PeerFaults.timedOut(new A2aException("init failed", unnamed)))
                .as("found through the causes")
                .isTrue();
        assertThat(PeerFaults.timedOut(new PeerFailedException(1, 2, "connection closed")))
                .isFalse();
        assertThat(PeerFaults.timedOut(new A2aException("no room"))).isFalse();
    }

    @Test
    void shouldNumberTheMembersOfAGroupOfSomeRanksAsTheWorldDoes() {
        int[] members = {0, 2, 3};
        // world rank 3 is member 2; it timed out waiting for member 1, world rank 2
        ExchangeTimeoutException e =
                new ExchangeTimeoutException(5, ExchangePhase.DISPATCH, 2, 1, 10);
        assertThat(PeerFaults.worldPeerOf(e, 3, members)).isEqualTo(2);
        assertThat(PeerFaults.worldPeerOf(e, 1, members))
                .as("a rank outside the group")
                .isEqualTo(PeerFaults.NONE);
        assertThat(
                        PeerFaults.worldPeerOf(
                                PeerFailedException.unreachable(1, 0, "x"), 1, new int[0]))
                .as("every rank a member")
                .isEqualTo(0);
    }
}
