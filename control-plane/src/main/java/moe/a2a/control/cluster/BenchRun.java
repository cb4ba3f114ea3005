package moe.a2a.control.cluster;

import moe.a2a.bench.BenchRouting;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.BenchWorkload;
import moe.a2a.bench.DispatcherBench;
import moe.a2a.bench.RankTimes;
import moe.a2a.bench.TransportBench;
import moe.a2a.comm.Communicator;

/** One rank's part of a benchmark workload in the chosen scope, on a live communicator. */
public final class BenchRun {
    private BenchRun() {}

    public static RankTimes rank(
            BenchWorkload w, BenchScope scope, Communicator comm, int warmup, int iters) {
        return scope == BenchScope.TRANSPORT
                ? TransportBench.run(w, comm, BenchRouting.rows(w), warmup, iters)
                : DispatcherBench.run(w, comm, warmup, iters);
    }
}
