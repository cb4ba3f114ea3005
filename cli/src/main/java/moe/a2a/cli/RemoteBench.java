package moe.a2a.cli;

import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.Collective;
import moe.a2a.bench.CollectiveCase;
import moe.a2a.bench.CollectiveReport;
import moe.a2a.bench.CollectiveTimes;
import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.comm.Transports;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import moe.a2a.v1.BenchEvent;
import moe.a2a.v1.BenchRequest;
import moe.a2a.v1.BenchResult;
import moe.a2a.v1.BenchServiceGrpc;
import moe.a2a.v1.CollectiveBenchRequest;
import moe.a2a.v1.CollectiveBenchResult;
import moe.a2a.v1.CollectiveRankTimes;

/**
 * {@code bench --target}: drives BenchService on a live server and prints what it streams: the
 * workloads' results, or with {@code --collective} the same table, JSON rows and charts as a local
 * {@code bench --collective}, computed here from every rank's times the server sends.
 */
final class RemoteBench {
    private RemoteBench() {}

    static int run(
            ChannelOptions connection,
            String target,
            String workload,
            BenchScope scope,
            int iters,
            int warmup,
            Path json)
            throws Exception {
        ManagedChannel channel = connection.open(target);
        try {
            BenchRequest.Builder request =
                    BenchRequest.newBuilder()
                            .setIters(iters)
                            .setWarmup(warmup)
                            .setScope(scope.name().toLowerCase(Locale.ROOT));
            if (!workload.equals("all")) {
                request.addWorkloads(workload);
            }
            List<String> reports = new ArrayList<>();
            boolean ok = true;
            Iterator<BenchEvent> events =
                    BenchServiceGrpc.newBlockingStub(channel).run(request.build());
            while (events.hasNext()) {
                BenchEvent event = events.next();
                if (event.hasProgress()) {
                    System.out.printf(
                            Locale.ROOT,
                            "[%d/%d] running %s on %s%n",
                            event.getProgress().getIndex(),
                            event.getProgress().getTotal(),
                            event.getProgress().getWorkload(),
                            target);
                    continue;
                }
                BenchResult r = event.getResult();
                if (!r.getRan()) {
                    System.out.printf(
                            Locale.ROOT, "  %-18s skipped: %s%n", r.getWorkload(), r.getReason());
                    continue;
                }
                ok &= r.getOk();
                reports.add(r.getJson());
                System.out.printf(
                        Locale.ROOT,
                        "  %-18s %-5s %s total p50 %.0f us, p90 %.0f us %s%n",
                        r.getWorkload(),
                        r.getTransport(),
                        r.getFingerprint(),
                        r.getTotalUsP50(),
                        r.getTotalUsP90(),
                        r.getOk() ? "ok" : "FAIL");
            }
            if (json != null) {
                Files.writeString(json, "[\n" + String.join(",\n", reports) + "\n]\n");
            }
            return ok ? 0 : 1;
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    /** {@code bench --target --collective}: the plan's cases on the server's group. */
    static int collectives(
            ChannelOptions connection,
            String target,
            CollectiveBenchRun.Plan plan,
            Path json,
            Path plots)
            throws Exception {
        CollectiveBenchRequest.Builder spec =
                CollectiveBenchRequest.newBuilder()
                        .setDtype(CollectiveCase.label(plan.dtype()))
                        .setOp(CollectiveCase.label(plan.op()))
                        .setAlgo(CollectiveCase.label(plan.algo()))
                        .setRoot(plan.root())
                        .setWarmup(plan.warmup())
                        .addAllSizes(plan.sizes());
        for (Collective c : plan.collectives()) {
            spec.addCollectives(c.label());
        }
        ManagedChannel channel = connection.open(target);
        try {
            List<CollectiveBenchRun.Measured> measured = new ArrayList<>();
            int failed = 0;
            try {
                Iterator<BenchEvent> events =
                        BenchServiceGrpc.newBlockingStub(channel)
                                .run(
                                        BenchRequest.newBuilder()
                                                .setIters(plan.iters())
                                                .setCollective(spec)
                                                .build());
                while (events.hasNext()) {
                    BenchEvent event = events.next();
                    if (event.hasCollectiveResult()) {
                        if (measured.isEmpty()) {
                            CollectiveBenchRun.printColumns(plan);
                            System.out.println(
                                    "ranks and transport: "
                                            + target
                                            + "'s serving group; link: measured there for"
                                            + " in-process ranks (one thread's memcpy at the"
                                            + " size), not for tcp or nccl ranks");
                            CollectiveBenchRun.printHeader();
                        }
                        CollectiveReport r = report(event.getCollectiveResult());
                        CollectiveBenchRun.print(r);
                        measured.add(new CollectiveBenchRun.Measured(r, r.c().sizeBytes()));
                    }
                }
            } catch (StatusRuntimeException e) {
                if (measured.isEmpty()) {
                    throw e;
                }
                failed++;
                System.out.printf(
                        Locale.ROOT,
                        "FAIL %s: the rest of its cases did not run: %s%n",
                        target,
                        Main.oneLine(e));
            }
            return CollectiveBenchRun.finish(measured, false, failed, json, plots);
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    /** A case's report from the server's raw figures, as a local run computes it. */
    static CollectiveReport report(CollectiveBenchResult r) {
        CollectiveCase c =
                new CollectiveCase(
                        Collective.parse("collective", r.getCollective()),
                        r.getRanks(),
                        r.getSizeBytes(),
                        CollectiveCase.choice("dtype", r.getDtype(), DType.values(), DType.FP32),
                        CollectiveCase.choice("op", r.getOp(), ReduceOp.values(), ReduceOp.SUM),
                        CollectiveCase.choice(
                                "algo", r.getAlgo(), CollectiveAlgo.values(), CollectiveAlgo.AUTO),
                        r.getRoot());
        List<CollectiveTimes> times = new ArrayList<>();
        for (CollectiveRankTimes t : r.getRanksTimesList()) {
            long[] ns = t.getNsList().stream().mapToLong(Long::longValue).toArray();
            times.add(new CollectiveTimes(ns, t.getWrong()));
        }
        return CollectiveReport.of(
                c, Transports.parse("transport", r.getTransport()), times, r.getLinkGbps());
    }
}
