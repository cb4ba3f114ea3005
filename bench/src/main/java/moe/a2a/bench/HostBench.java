package moe.a2a.bench;

import java.nio.FloatBuffer;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import moe.a2a.comm.Communicator;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.DispatchLayout;
import moe.a2a.dispatch.DispatchResult;
import moe.a2a.dispatch.DispatchRowLayout;
import moe.a2a.dispatch.HierarchicalDispatcher;
import moe.a2a.dispatch.HostTopology;
import moe.a2a.dispatch.Placement;
import moe.a2a.kernels.DType;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;

/**
 * One rank's part of the multi-host benchmark: a canonical workload's ranks split over hosts
 * ({@link HostTopology}), its tokens dispatched flat (every rank straight to every rank) or
 * hierarchically ({@link HierarchicalDispatcher}), with the loop and validation expert of {@link
 * DispatcherBench}. Reports the bytes each step sends to other hosts.
 */
public final class HostBench {
    private HostBench() {}

    /** A rank's times and the dispatch and combine bytes it sends to other hosts per step. */
    public record Result(RankTimes times, long interHostBytesPerStep) {}

    /**
     * The flat path on {@code world}, every rank of the workload; bytes counted from the layout.
     */
    public static Result flat(
            BenchWorkload w, HostTopology topology, Communicator world, int warmup, int iters) {
        Placement placement = Placement.contiguous(w.experts(), w.worldSize());
        RankTimes times =
                DispatcherBench.run(w, world, warmup, iters, DispatchDType.BF16, placement);
        return new Result(times, flatInterHostBytes(w, placement, topology, world.rank()));
    }

    /**
     * The hierarchical path on this rank's rail and host group; bytes as the dispatcher sent them.
     */
    public static Result hierarchical(
            BenchWorkload w,
            HostTopology topology,
            Communicator rail,
            Communicator hostGroup,
            int warmup,
            int iters) {
        Placement placement = Placement.contiguous(w.experts(), w.worldSize());
        HierarchicalDispatcher path =
                new HierarchicalDispatcher(
                        rail, hostGroup, topology, placement, w.hidden(), w.topK());
        final int me = topology.rank(rail.rank(), hostGroup.rank());
        Runnable barrier = barrier(rail, hostGroup);
        RankTimes times =
                DispatcherBench.run(
                        w,
                        me,
                        barrier,
                        warmup,
                        iters,
                        path,
                        null,
                        new DispatcherBench.Check() {
                            @Override
                            public boolean received(DispatchResult result) {
                                return receivedRows(w, me, result, placement);
                            }

                            @Override
                            public boolean combined(int[] ids, FloatBuffer out) {
                                return combinedRight(w, me, ids, out, placement, topology);
                            }
                        });
        return new Result(times, path.interHostBytes() / (warmup + iters));
    }

    /**
     * A barrier of every rank of every host: the host's ranks meet, one rank per host meets the
     * others on each rail, and the host's ranks meet again.
     */
    public static Runnable barrier(Communicator rail, Communicator hostGroup) {
        return () -> {
            hostGroup.barrier();
            rail.barrier();
            hostGroup.barrier();
        };
    }

    /** Rows and their combine rows that the flat path sends from {@code rank} to other hosts. */
    static long flatInterHostBytes(
            BenchWorkload w, Placement placement, HostTopology topology, int rank) {
        DispatchLayout layout = new DispatchLayout(placement, rank);
        layout.compute(BenchRouting.topkIds(w, rank), w.tokens(), w.topK());
        long rows = 0;
        for (int d = 0; d < w.worldSize(); d++) {
            if (topology.host(d) != topology.host(rank)) {
                rows += layout.tokensPerRank(d);
            }
        }
        DispatchRowLayout row =
                new DispatchRowLayout(w.hidden(), w.topK(), DType.BF16, DispatchDType.BF16);
        return rows * (row.rowBytes() + row.combineRowBytes());
    }

    /**
     * The rows received are those of every source's tokens that visit this rank: the same multiset
     * of payloads as the flat path delivers (the order differs: forwarded rows come through their
     * gateway).
     */
    private static boolean receivedRows(
            BenchWorkload w, int me, DispatchResult result, Placement placement) {
        Map<Integer, Integer> expected = new HashMap<>();
        for (int src = 0; src < w.worldSize(); src++) {
            DispatchLayout layout = new DispatchLayout(placement, src);
            layout.compute(BenchRouting.topkIds(w, src), w.tokens(), w.topK());
            for (int tok = 0; tok < w.tokens(); tok++) {
                if (layout.tokenInRank(tok, me)) {
                    expected.merge(
                            Arrays.hashCode(
                                    DispatcherBench.sentRow(w, src, tok, DispatchDType.BF16)),
                            1,
                            Integer::sum);
                }
            }
        }
        float[] row = new float[w.hidden()];
        for (int j = 0; j < result.numRecvTokens(); j++) {
            result.recvToken(j, row, 0);
            Integer left = expected.computeIfPresent(Arrays.hashCode(row), (k, v) -> v - 1);
            if (left == null || left < 0) {
                return false;
            }
        }
        return expected.values().stream().allMatch(v -> v == 0);
    }

    /**
     * Every token's output: its own host's rows summed in fp32 in rank order, then each remote
     * host's sum (in rank order, rounded to bf16 once more before it crossed back), hosts in order.
     */
    private static boolean combinedRight(
            BenchWorkload w,
            int me,
            int[] ids,
            FloatBuffer out,
            Placement placement,
            HostTopology topology) {
        int k = w.topK();
        DispatchLayout layout = new DispatchLayout(placement, me);
        layout.compute(ids, w.tokens(), k);
        float[] factor = new float[w.worldSize()];
        for (int tok = 0; tok < w.tokens(); tok++) {
            Arrays.fill(factor, 0);
            for (int j = 0; j < k; j++) {
                factor[layout.chosenRank(tok * k + j)] += 1f / k;
            }
            float[] sent = DispatcherBench.sentRow(w, me, tok, DispatchDType.BF16);
            for (int c = 0; c < w.hidden(); c++) {
                float expected = hostSum(topology, topology.host(me), factor, sent[c]);
                for (int g = 0; g < topology.hosts(); g++) {
                    if (g != topology.host(me)) {
                        expected += DType.BF16.round(hostSum(topology, g, factor, sent[c]));
                    }
                }
                if (out.get(tok * w.hidden() + c) != expected) {
                    return false;
                }
            }
        }
        return true;
    }

    /** Σ over {@code host}'s ranks d, in order, of bf16(val · factor_d · (d + 1)). */
    private static float hostSum(HostTopology topology, int host, float[] factor, float val) {
        float sum = 0;
        for (int l = 0; l < topology.ranksPerHost(); l++) {
            int d = topology.rank(host, l);
            if (factor[d] > 0) {
                sum += DType.BF16.round(val * (factor[d] * (d + 1)));
            }
        }
        return sum;
    }
}
