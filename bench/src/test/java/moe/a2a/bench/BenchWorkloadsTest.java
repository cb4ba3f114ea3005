package moe.a2a.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.RankThreads;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.protocol.RoutingTrace;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code bench --routing-trace}: a trace's layer replayed as the routing of the bench's ranks. */
@Timeout(60)
class BenchWorkloadsTest {
    static final int E = 16;
    static final int K = 3;
    static final int RANKS = 4;

    @TempDir Path dir;

    /** Steps of layers 0 and 1 alternating, uneven tokens per rank, skewed toward low ids. */
    static RoutingTrace trace(long seed, int steps) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<RoutingTrace.Step> out = new ArrayList<>();
        for (int s = 0; s < steps; s++) {
            int[] perRank = new int[RANKS];
            int tokens = 0;
            for (int r = 0; r < RANKS; r++) {
                perRank[r] = rnd.nextInt(0, 9);
                tokens += perRank[r];
            }
            int[] ids = new int[tokens * K];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = Math.min(rnd.nextInt(E), rnd.nextInt(E));
            }
            out.add(new RoutingTrace.Step(s, s % 2, perRank, ids));
        }
        return new RoutingTrace(E, K, RANKS, steps, 1, out);
    }

    @Test
    void shouldReplayTheLayersTokensInRecordedOrderSplitOverTheRanks() throws Exception {
        RoutingTrace trace = trace(5, 30);
        Path file = dir.resolve("t.trace");
        trace.write(file);
        BenchWorkload w = BenchWorkloads.resolve(BenchWorkloads.traceName(file, 1));

        List<Integer> stream = new ArrayList<>();
        for (RoutingTrace.Step s : trace.steps()) {
            if (s.layer() == 1) {
                for (int id : s.ids()) {
                    stream.add(id);
                }
            }
        }
        int perRank = stream.size() / K / RANKS;
        assertThat(w.worldSize()).isEqualTo(RANKS);
        assertThat(w.tokens()).isEqualTo(perRank);
        assertThat(w.experts()).isEqualTo(E);
        assertThat(w.topK()).isEqualTo(K);
        assertThat(w.routing()).isEqualTo("recorded");
        for (int r = 0; r < RANKS; r++) {
            assertThat(BenchRouting.topkIds(w, r))
                    .as("rank " + r)
                    .containsExactly(
                            stream.subList(r * perRank * K, (r + 1) * perRank * K).stream()
                                    .mapToInt(Integer::intValue)
                                    .toArray());
        }
    }

    @Test
    void shouldValidateTheDispatcherPathOnAReplayedTraceWithReplicas() throws Exception {
        Path file = dir.resolve("t.trace");
        trace(9, 20).write(file);
        BenchWorkload w = BenchWorkloads.resolve(BenchWorkloads.traceName(file, 0));
        LocalGroup group = new LocalGroup(RANKS, TimeUnit.SECONDS.toNanos(20));
        List<RankTimes> times =
                RankThreads.run(
                        RANKS,
                        rank ->
                                BenchRun.rank(
                                        w,
                                        BenchScope.DISPATCHER,
                                        group.communicator(rank),
                                        1,
                                        2,
                                        DispatchDType.BF16,
                                        RANKS));
        assertThat(times).allMatch(RankTimes::ok);
    }

    @Test
    void shouldNameWhatIsMissing() throws Exception {
        Path file = dir.resolve("t.trace");
        trace(3, 4).write(file);
        assertThatThrownBy(() -> BenchWorkloads.resolve(BenchWorkloads.traceName(file, 7)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--trace-layer: 7")
                .hasMessageContaining("recorded layers [0, 1]");
        Path tiny = dir.resolve("tiny.trace");
        new RoutingTrace(
                        E,
                        K,
                        RANKS,
                        1,
                        1,
                        List.of(new RoutingTrace.Step(0, 0, new int[] {1, 1, 0, 0}, new int[6])))
                .write(tiny);
        assertThatThrownBy(() -> BenchWorkloads.resolve(BenchWorkloads.traceName(tiny, 0)))
                .hasMessageContaining("layer 0 has 2 tokens, fewer than the 4 ranks");
        assertThatThrownBy(() -> BenchWorkloads.resolve("prefil"))
                .hasMessageStartingWith("workload: prefil (expected: one of");
    }
}
