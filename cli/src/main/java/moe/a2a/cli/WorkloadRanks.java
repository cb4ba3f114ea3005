package moe.a2a.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.RankTimes;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.DispatchMode;
import moe.a2a.workload.BenchWorkload;

/**
 * Where a workload's ranks run for {@code bench}: {@code local} as threads of this JVM ({@link
 * LocalBenchRanks}); tcp and shm one child process per rank ({@code bench-rank}), meeting through
 * the run's temporary folder ({@link ChildRankGroup}).
 */
record WorkloadRanks(
        BenchScope scope,
        DispatchDType dispatchDType,
        DispatchMode mode,
        int redundantExperts,
        int expertFfn) {

    /** Every rank's times for one run of {@code w} on {@code transport}. */
    List<RankTimes> run(BenchWorkload w, Transport transport, int warmup, int iters)
            throws Exception {
        return Transports.reach(transport) == TransportReach.THREADS
                ? LocalBenchRanks.run(
                        w, scope, warmup, iters, dispatchDType, mode, redundantExperts, expertFfn)
                : runProcesses(w, transport, warmup, iters);
    }

    private List<RankTimes> runProcesses(
            BenchWorkload w, Transport transport, int warmup, int iters) throws Exception {
        try (RankProcesses children = RankProcesses.create("moe-a2a-bench-")) {
            for (int r = 0; r < w.worldSize(); r++) {
                children.start(
                        List.of("-Xmx1g"),
                        List.of(
                                "bench-rank",
                                "--transport",
                                transport.label(),
                                "--workload",
                                w.canonicalName(),
                                "--tokens",
                                Integer.toString(w.tokens()),
                                "--mode",
                                mode.label(),
                                "--rank",
                                Integer.toString(r),
                                "--dir",
                                children.dir().toString(),
                                "--group-id",
                                Long.toString(children.groupId()),
                                "--iters",
                                Integer.toString(iters),
                                "--warmup",
                                Integer.toString(warmup),
                                "--scope",
                                scope.name(),
                                "--dispatch-dtype",
                                dispatchDType.label(),
                                "--redundant-experts",
                                Integer.toString(redundantExperts),
                                "--expert-ffn",
                                Integer.toString(expertFfn)));
            }
            List<RankTimes> out = new ArrayList<>();
            for (int r = 0; r < w.worldSize(); r++) {
                children.awaitExit(r, 10, TimeUnit.MINUTES);
                out.add(BenchRankCommand.read(children.dir().resolve("rank-" + r + ".times")));
            }
            return out;
        }
    }
}
