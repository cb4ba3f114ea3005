package moe.a2a.bench;

import moe.a2a.comm.Communicator;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.DispatchMode;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;
import org.jspecify.annotations.Nullable;

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
        return rank(w, scope, comm, warmup, iters, dispatchDType, 0);
    }

    /**
     * With {@code redundant} extra expert slots, placed for the workload's loads ({@link
     * BenchPlacement}); the transport scope moves the canonical rows and takes none.
     */
    public static RankTimes rank(
            BenchWorkload w,
            BenchScope scope,
            Communicator comm,
            int warmup,
            int iters,
            DispatchDType dispatchDType,
            int redundant) {
        return rank(w, scope, comm, warmup, iters, dispatchDType, redundant, null);
    }

    /** With {@code experts} timed between dispatch and combine (dispatcher scope only). */
    public static RankTimes rank(
            BenchWorkload w,
            BenchScope scope,
            Communicator comm,
            int warmup,
            int iters,
            DispatchDType dispatchDType,
            int redundant,
            @Nullable ExpertStage experts) {
        return rank(
                w,
                scope,
                comm,
                warmup,
                iters,
                dispatchDType,
                DispatchMode.NORMAL,
                redundant,
                experts);
    }

    /** Exchanged in {@code mode} (dispatcher scope only for low latency). */
    public static RankTimes rank(
            BenchWorkload w,
            BenchScope scope,
            Communicator comm,
            int warmup,
            int iters,
            DispatchDType dispatchDType,
            DispatchMode mode,
            int redundant,
            @Nullable ExpertStage experts) {
        if (scope == BenchScope.TRANSPORT && mode != DispatchMode.NORMAL) {
            throw new IllegalArgumentException(
                    "--mode: "
                            + mode.label()
                            + " (expected: normal with --scope TRANSPORT, which times the normal"
                            + " exchanges alone)");
        }
        if (scope == BenchScope.TRANSPORT && experts != null) {
            throw new IllegalArgumentException(
                    "experts: an expert stage (expected: none with --scope TRANSPORT, which times"
                            + " the exchanges alone)");
        }
        if (scope == BenchScope.TRANSPORT) {
            if (redundant != 0) {
                throw new IllegalArgumentException(
                        "--redundant-experts: "
                                + redundant
                                + " (expected: 0 with --scope TRANSPORT, which moves the canonical"
                                + " rows)");
            }
            return TransportBench.run(w, comm, BenchRouting.rows(w), warmup, iters);
        }
        return DispatcherBench.run(
                w,
                comm,
                warmup,
                iters,
                dispatchDType,
                mode,
                BenchPlacement.of(w, redundant),
                experts);
    }
}
