package moe.a2a.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import moe.a2a.bench.BenchExperts;
import moe.a2a.bench.BenchRun;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.RankTimes;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.DispatchMode;
import moe.a2a.workload.BenchWorkload;

/** {@code bench --transport local}: a workload's ranks as threads of this JVM, one group. */
final class LocalBenchRanks {
    private LocalBenchRanks() {}

    /**
     * Runs every rank of {@code w}; with {@code expertFfn > 0} each rank first loads its experts
     * ({@link BenchExperts}, not timed) and times them between dispatch and combine.
     */
    static List<RankTimes> run(
            BenchWorkload w,
            BenchScope scope,
            int warmup,
            int iters,
            DispatchDType dispatchDType,
            DispatchMode mode,
            int redundantExperts,
            int expertFfn)
            throws Exception {
        LocalGroup group = new LocalGroup(w.worldSize(), TimeUnit.SECONDS.toNanos(120));
        ExecutorService pool = Executors.newFixedThreadPool(w.worldSize());
        try {
            List<Future<RankTimes>> ranks = new ArrayList<>();
            for (int r = 0; r < w.worldSize(); r++) {
                final int rank = r;
                ranks.add(
                        pool.submit(
                                () ->
                                        BenchRun.rank(
                                                w,
                                                scope,
                                                group.communicator(rank),
                                                warmup,
                                                iters,
                                                dispatchDType,
                                                mode,
                                                redundantExperts,
                                                BenchExperts.of(
                                                        w, redundantExperts, rank, expertFfn))));
            }
            List<RankTimes> out = new ArrayList<>();
            for (Future<RankTimes> f : ranks) {
                out.add(f.get());
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }
}
