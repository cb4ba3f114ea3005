package moe.a2a.control.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class LinkFaultsTest {
    static final int[] ALL = {0, 1, 2, 3, 4};

    @Test
    void shouldTakeALinkForCutOnlyWhenBothEndsNamedEachOther() {
        LinkFaults links = new LinkFaults(5);
        // rank 3 is stopped: every other rank names it, it names none
        for (int r : new int[] {0, 1, 2, 4}) {
            links.named(r, 3, 100);
        }
        assertThat(links.setAsideCut(ALL, 200)).isEmpty();
        assertThat(links.count()).isZero();

        links.named(1, 2, 300);
        links.named(2, 1, 310);
        assertThat(links.setAsideCut(ALL, 400)).containsExactly(new LinkFaults.Link(1, 2));
        assertThat(links.asideRanks()).as("the higher end on a tie").containsExactly(2);
        assertThat(links.cutPeer(2)).isEqualTo(1);
        assertThat(links.usable(ALL)).containsExactly(0, 1, 3, 4);
        assertThat(links.setAsideCut(ALL, 500)).as("nothing new").isEmpty();
    }

    @Test
    void shouldForgetEvidenceOlderThanItsWindow() {
        LinkFaults links = new LinkFaults(3);
        links.named(0, 1, 0);
        links.named(1, 0, LinkFaults.EVIDENCE_NANOS + 10);
        assertThat(links.setAsideCut(new int[] {0, 1, 2}, LinkFaults.EVIDENCE_NANOS + 20))
                .isEmpty();
        links.named(0, 1, LinkFaults.EVIDENCE_NANOS + 30);
        assertThat(links.setAsideCut(new int[] {0, 1, 2}, LinkFaults.EVIDENCE_NANOS + 40))
                .hasSize(1);
    }

    @Test
    void shouldIgnoreRanksWithoutAWorkerAndForgetALostOne() {
        LinkFaults links = new LinkFaults(4);
        links.named(0, 3, 1);
        links.named(3, 0, 2);
        assertThat(links.setAsideCut(new int[] {0, 1, 2}, 3))
                .as("rank 3 holds no worker")
                .isEmpty();
        assertThat(links.setAsideCut(new int[] {0, 1, 2, 3}, 3)).hasSize(1);
        links.forget(3);
        assertThat(links.count()).isZero();
        assertThat(links.setAsideCut(new int[] {0, 1, 2, 3}, 4))
                .as("its evidence is gone too")
                .isEmpty();
    }

    /** On random cut links, no cut link is left between two usable ranks, and few ranks go. */
    @Test
    void shouldLeaveNoCutLinkAmongTheUsableRanks() {
        SplittableRandom random = new SplittableRandom(7);
        for (int trial = 0; trial < 200; trial++) {
            int n = 2 + random.nextInt(7);
            LinkFaults links = new LinkFaults(n);
            boolean[][] cut = new boolean[n][n];
            int[] all = IntStream.range(0, n).toArray();
            for (int a = 0; a < n; a++) {
                for (int b = a + 1; b < n; b++) {
                    if (random.nextInt(4) == 0) {
                        cut[a][b] = true;
                        links.named(a, b, 5);
                        links.named(b, a, 6);
                    } else if (random.nextInt(3) == 0) {
                        links.named(a, b, 5); // one-sided: a slow or stopped peer
                    }
                }
            }
            List<LinkFaults.Link> found = links.setAsideCut(all, 10);
            int cuts = 0;
            for (int a = 0; a < n; a++) {
                for (int b = a + 1; b < n; b++) {
                    cuts += cut[a][b] ? 1 : 0;
                    if (cut[a][b]) {
                        assertThat(links.isAside(a) || links.isAside(b))
                                .as("trial %d: link %d-%d left in the group", trial, a, b)
                                .isTrue();
                    }
                }
            }
            assertThat(found).hasSize(cuts);
            assertThat(links.count()).isLessThanOrEqualTo(cuts);
            for (int r : links.asideRanks()) {
                assertThat(cut[Math.min(r, links.cutPeer(r))][Math.max(r, links.cutPeer(r))])
                        .as("trial %d: rank %d set aside for a link that is not cut", trial, r)
                        .isTrue();
            }
        }
    }

    @Test
    void shouldDoubleTheProbeDelayUpToItsCapAndStartOverWhenWhole() {
        LinkFaults links = new LinkFaults(2);
        assertThat(links.probeDelayNanos()).isEqualTo(LinkFaults.FIRST_PROBE_NANOS);
        for (int i = 0; i < 10; i++) {
            links.backOff();
        }
        assertThat(links.probeDelayNanos()).isEqualTo(LinkFaults.MAX_PROBE_NANOS);
        links.whole();
        assertThat(links.probeDelayNanos()).isEqualTo(LinkFaults.FIRST_PROBE_NANOS);
    }
}
