package moe.a2a.bench.grpc;

import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.function.Supplier;
import moe.a2a.bench.BenchReport;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.Collective;
import moe.a2a.bench.CollectiveBench;
import moe.a2a.bench.CollectiveCase;
import moe.a2a.bench.CollectiveReport;
import moe.a2a.bench.CollectiveTimes;
import moe.a2a.bench.MachineLimits;
import moe.a2a.bench.RankTimes;
import moe.a2a.bench.task.GroupBench;
import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import moe.a2a.control.cluster.RankGroup;
import moe.a2a.control.cluster.StepScheduler;
import moe.a2a.control.grpc.StatusMapping;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import moe.a2a.protocol.InvalidRequestException;
import moe.a2a.v1.BenchEvent;
import moe.a2a.v1.BenchProgress;
import moe.a2a.v1.BenchRequest;
import moe.a2a.v1.BenchResult;
import moe.a2a.v1.BenchServiceGrpc;
import moe.a2a.v1.CollectiveBenchRequest;
import moe.a2a.v1.CollectiveBenchResult;
import moe.a2a.v1.CollectiveRankTimes;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;

/**
 * BenchService: runs canonical workloads, or collective cases ({@link CollectiveBench}), on the
 * serving ranks' own communicators, between steps, and streams progress and results. The memcpy
 * bound is measured at the start of each workload run; an in-process group's link (one thread's
 * memcpy) before each collective size.
 */
public final class BenchGrpcService extends BenchServiceGrpc.BenchServiceImplBase {
    static final int MAX_ITERS = 1000;
    static final int MAX_WARMUP = 100;

    private final RankGroup group;
    private final GroupBench bench;

    public BenchGrpcService(RankGroup group, StepScheduler scheduler) {
        this.group = group;
        this.bench = new GroupBench(group, scheduler);
    }

    @Override
    public void run(BenchRequest request, StreamObserver<BenchEvent> events) {
        try {
            if (request.hasCollective()) {
                collectives(request, events);
                events.onCompleted();
                return;
            }
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
                    List<RankTimes> times = bench.workload(w, scope, warmup, iters).get();
                    BenchReport r = BenchReport.of(w, group.transport(), scope, times, memcpy);
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

    /** The collective cases of {@code request.collective}, each on every rank, in order. */
    private void collectives(BenchRequest request, StreamObserver<BenchEvent> events)
            throws Exception {
        if (request.getWorkloadsCount() != 0 || !request.getScope().isEmpty()) {
            throw new InvalidRequestException(
                    "workloads, scope: not with collective (workloads and collectives run apart)");
        }
        bounded("iters", request.getIters(), 1, MAX_ITERS);
        CollectiveBenchRequest spec = request.getCollective();
        int warmup;
        if (spec.hasWarmup()) {
            if (spec.getWarmup() < 0 || spec.getWarmup() > MAX_WARMUP) {
                throw new InvalidRequestException(
                        "collective.warmup: "
                                + spec.getWarmup()
                                + " (expected: in [0, "
                                + MAX_WARMUP
                                + "])");
            }
            warmup = spec.getWarmup();
        } else {
            bounded("warmup", request.getWarmup(), 0, MAX_WARMUP);
            warmup = request.getWarmup() > 0 ? request.getWarmup() : CollectiveBench.DEFAULT_WARMUP;
        }
        int iters = request.getIters() > 0 ? request.getIters() : CollectiveBench.DEFAULT_ITERS;
        List<CollectiveCase> cases = cases(spec, group.worldSize());
        Transport transport = group.transport();
        Map<Long, Double> links = new HashMap<>();
        for (int i = 0; i < cases.size(); i++) {
            CollectiveCase c = cases.get(i);
            events.onNext(
                    BenchEvent.newBuilder()
                            .setProgress(
                                    BenchProgress.newBuilder()
                                            .setWorkload(c.collective().label())
                                            .setBytes(c.sizeBytes())
                                            .setIndex(i + 1)
                                            .setTotal(cases.size()))
                            .build());
            double link =
                    Transports.reach(transport) == TransportReach.THREADS
                            ? links.computeIfAbsent(
                                    c.bytes(), b -> MachineLimits.copyGbps((int) (long) b))
                            : 0;
            List<CollectiveTimes> times = bench.collective(c, warmup, iters).get();
            CollectiveReport report = CollectiveReport.of(c, transport, times, link);
            CollectiveBenchResult.Builder result =
                    CollectiveBenchResult.newBuilder()
                            .setCollective(c.collective().label())
                            .setTransport(transport.label())
                            .setRanks(c.ranks())
                            .setSizeBytes(c.sizeBytes())
                            .setDtype(CollectiveCase.label(c.dtype()))
                            .setOp(CollectiveCase.label(c.op()))
                            .setAlgo(CollectiveCase.label(c.algo()))
                            .setRoot(c.root())
                            .setLinkGbps(link)
                            .setJson(report.json(Double.NaN));
            for (CollectiveTimes t : times) {
                CollectiveRankTimes.Builder rank =
                        CollectiveRankTimes.newBuilder().setWrong(t.wrong());
                for (long ns : t.ns()) {
                    rank.addNs(ns);
                }
                result.addRanksTimes(rank);
            }
            events.onNext(BenchEvent.newBuilder().setCollectiveResult(result).build());
        }
    }

    /**
     * Every collective at every size on a group of {@code ranks}; a size that rounds to the same
     * bytes as the one before it runs once. An error names the field.
     */
    static List<CollectiveCase> cases(CollectiveBenchRequest spec, int ranks) {
        if (ranks < 2) {
            throw new InvalidRequestException(
                    "collective: this cluster has " + ranks + " rank (expected: at least 2)");
        }
        if (spec.getCollectivesCount() == 0 || spec.getSizesCount() == 0) {
            throw new InvalidRequestException(
                    "collective: "
                            + spec.getCollectivesCount()
                            + " collectives, "
                            + spec.getSizesCount()
                            + " sizes (expected: at least one of each)");
        }
        List<Collective> collectives = new ArrayList<>();
        for (int i = 0; i < spec.getCollectivesCount(); i++) {
            String name = spec.getCollectives(i);
            Collective c = parsed(() -> Collective.parse("", name), "collectives", i);
            if (!collectives.contains(c)) {
                collectives.add(c);
            }
        }
        for (int i = 0; i < spec.getSizesCount(); i++) {
            long size = spec.getSizes(i);
            if (size < 1 || size > CollectiveCase.MAX_BYTES) {
                throw new InvalidRequestException(
                        "collective.sizes["
                                + i
                                + "]: "
                                + size
                                + " (expected: 1 to "
                                + CollectiveCase.MAX_BYTES
                                + ")");
            }
        }
        DType dtype =
                parsed(
                        () ->
                                CollectiveCase.choice(
                                        "", spec.getDtype(), DType.values(), DType.FP32),
                        "dtype",
                        -1);
        ReduceOp op =
                parsed(
                        () ->
                                CollectiveCase.choice(
                                        "", spec.getOp(), ReduceOp.values(), ReduceOp.SUM),
                        "op",
                        -1);
        CollectiveAlgo algo =
                parsed(
                        () ->
                                CollectiveCase.choice(
                                        "",
                                        spec.getAlgo(),
                                        CollectiveAlgo.values(),
                                        CollectiveAlgo.AUTO),
                        "algo",
                        -1);
        int root = spec.getRoot();
        if (collectives.contains(Collective.BROADCAST) && (root < 0 || root >= ranks)) {
            throw new InvalidRequestException(
                    "collective.root: "
                            + root
                            + " (expected: in [0, "
                            + ranks
                            + "), this cluster's ranks)");
        }
        int caseRoot = collectives.contains(Collective.BROADCAST) ? root : 0;
        List<CollectiveCase> out = new ArrayList<>();
        for (Collective c : collectives) {
            long last = -1;
            for (long size : spec.getSizesList()) {
                CollectiveCase k = new CollectiveCase(c, ranks, size, dtype, op, algo, caseRoot);
                if (k.bytes() != last) {
                    out.add(k);
                    last = k.bytes();
                }
            }
        }
        return out;
    }

    /**
     * {@code parse}'s value; its error ("": text (expected: ...)) as an invalid request naming
     * {@code collective.field} (and {@code [index]} when not negative).
     */
    private static <T> T parsed(Supplier<T> parse, String field, int index) {
        try {
            return parse.get();
        } catch (IllegalArgumentException e) {
            throw new InvalidRequestException(
                    "collective."
                            + field
                            + (index >= 0 ? "[" + index + "]" : "")
                            + String.valueOf(e.getMessage()));
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
