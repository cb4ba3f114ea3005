package moe.a2a.control.grpc;

import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutionException;
import moe.a2a.bench.BenchReport;
import moe.a2a.bench.BenchRouting;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.BenchWorkload;
import moe.a2a.bench.MachineLimits;
import moe.a2a.bench.RankTimes;
import moe.a2a.control.cluster.RankGroup;
import moe.a2a.control.cluster.StepScheduler;
import moe.a2a.protocol.InvalidRequestException;
import moe.a2a.v1.BenchEvent;
import moe.a2a.v1.BenchProgress;
import moe.a2a.v1.BenchRequest;
import moe.a2a.v1.BenchResult;
import moe.a2a.v1.BenchServiceGrpc;

/**
 * BenchService: runs canonical workloads on the serving ranks' own communicators, between steps,
 * and streams progress and results. The memcpy bound is measured at the start of each run.
 */
public final class BenchGrpcService extends BenchServiceGrpc.BenchServiceImplBase {
    static final int MAX_ITERS = 1000;
    static final int MAX_WARMUP = 100;

    private final RankGroup group;
    private final StepScheduler scheduler;

    public BenchGrpcService(RankGroup group, StepScheduler scheduler) {
        this.group = group;
        this.scheduler = scheduler;
    }

    @Override
    public void run(BenchRequest request, StreamObserver<BenchEvent> events) {
        try {
            List<BenchWorkload> workloads = workloads(request);
            bounded("iters", request.getIters(), 1, MAX_ITERS);
            bounded("warmup", request.getWarmup(), 0, MAX_WARMUP);
            BenchScope scope = scope(request.getScope());
            double memcpy =
                    MachineLimits.memcpyGbps(
                            Runtime.getRuntime().availableProcessors(), 3, 64 << 20);
            for (int i = 0; i < workloads.size(); i++) {
                BenchWorkload w = workloads.get(i);
                events.onNext(
                        BenchEvent.newBuilder()
                                .setProgress(
                                        BenchProgress.newBuilder()
                                                .setWorkload(w.name())
                                                .setIndex(i + 1)
                                                .setTotal(workloads.size()))
                                .build());
                int[][] rows = BenchRouting.rows(w);
                BenchResult.Builder result =
                        BenchResult.newBuilder()
                                .setWorkload(w.name())
                                .setTransport(group.transport().label())
                                .setFingerprint(BenchRouting.fingerprint(rows));
                if (w.worldSize() != group.worldSize()) {
                    result.setRan(false)
                            .setReason(
                                    "needs "
                                            + w.worldSize()
                                            + " ranks; this cluster has "
                                            + group.worldSize());
                } else {
                    int iters = request.getIters() > 0 ? request.getIters() : w.defaultIters();
                    int warmup = request.getWarmup() > 0 ? request.getWarmup() : w.defaultWarmup();
                    List<RankTimes> times =
                            scheduler
                                    .runBetweenSteps(() -> group.bench(w, scope, warmup, iters))
                                    .get();
                    BenchReport r =
                            BenchReport.of(w, group.transport(), scope, rows, times, memcpy);
                    result.setRan(true)
                            .setOk(r.ok())
                            .setTotalUsP50(r.totalP50Us())
                            .setTotalUsP90(r.totalP90Us())
                            .setJson(r.json(memcpy));
                }
                events.onNext(BenchEvent.newBuilder().setResult(result).build());
            }
            events.onCompleted();
        } catch (ExecutionException e) {
            events.onError(StatusMapping.toStatus(e.getCause()).asRuntimeException());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            events.onError(StatusMapping.toStatus(e).asRuntimeException());
        } catch (Exception e) {
            events.onError(StatusMapping.toStatus(e).asRuntimeException());
        }
    }

    private static List<BenchWorkload> workloads(BenchRequest request) {
        if (request.getWorkloadsCount() == 0) {
            return BenchWorkload.CANONICAL;
        }
        List<BenchWorkload> out = new ArrayList<>();
        for (int i = 0; i < request.getWorkloadsCount(); i++) {
            String name = request.getWorkloads(i);
            try {
                out.add(BenchWorkload.named(name));
            } catch (IllegalArgumentException e) {
                throw new InvalidRequestException(
                        "workloads["
                                + i
                                + "]: "
                                + name
                                + " (expected: one of "
                                + BenchWorkload.CANONICAL.stream().map(BenchWorkload::name).toList()
                                + ")");
            }
        }
        return out;
    }

    /** 0 (unset) takes the workload's default; anything else must be within bounds. */
    private static void bounded(String field, int value, int min, int max) {
        if (value != 0 && (value < min || value > max)) {
            throw new InvalidRequestException(
                    field
                            + ": "
                            + value
                            + " (expected: 0 for the workload's default, or in ["
                            + min
                            + ", "
                            + max
                            + "])");
        }
    }

    private static BenchScope scope(String scope) {
        if (scope.isEmpty()) {
            return BenchScope.DISPATCHER;
        }
        try {
            return BenchScope.valueOf(scope.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new InvalidRequestException(
                    "scope: " + scope + " (expected: dispatcher or transport)");
        }
    }
}
