package moe.a2a.bench;

import moe.a2a.comm.Communicator;
import moe.a2a.dispatch.DispatchDType;

/** One rank's part of a benchmark workload in the chosen scope, on a live communicator. */
public final class BenchRun {
    private BenchRun() {}

    /** With rows dispatched as bf16, as the peers send them. */
    public static RankTimes rank(
            BenchWorkload w, BenchScope scope, Communicator comm, int warmup, int iters) {
        return rank(w, scope, comm, warmup, iters, DispatchDType.BF16);
    }

    /** The transport scope always moves bf16 rows; the dispatcher scope dispatches as asked. */
    public static RankTimes rank(
            BenchWorkload w,
            BenchScope scope,
            Communicator comm,
            int warmup,
            int iters,
            DispatchDType dispatchDType) {
        return scope == BenchScope.TRANSPORT
                ? TransportBench.run(w, comm, BenchRouting.rows(w), warmup, iters)
                : DispatcherBench.run(w, comm, warmup, iters, dispatchDType);
    }
}
