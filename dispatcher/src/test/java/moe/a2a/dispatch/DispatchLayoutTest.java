package moe.a2a.dispatch;

import static org.assertj.core.api.Assertions.assertThat;

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
            DispatchLayout layout = new DispatchLayout(placement);
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
}
