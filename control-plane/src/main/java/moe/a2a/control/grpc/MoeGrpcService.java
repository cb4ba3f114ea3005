package moe.a2a.control.grpc;

import com.google.common.util.concurrent.MoreExecutors;
import com.google.protobuf.ByteString;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import moe.a2a.control.cluster.ForwardJob;
import moe.a2a.control.cluster.ForwardOutcome;
import moe.a2a.control.cluster.LayerPlacements;
import moe.a2a.control.cluster.RankGroup;
import moe.a2a.control.cluster.StepScheduler;
import moe.a2a.dispatch.DispatchLayout;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RoutingInput;
import moe.a2a.experts.TokenRouter;
import moe.a2a.experts.WeightSource;
import moe.a2a.kernels.DType;
import moe.a2a.metrics.Imbalance;
import moe.a2a.metrics.StepStatsSnapshot;
import moe.a2a.protocol.InvalidRequestException;
import moe.a2a.protocol.TensorCodec;
import moe.a2a.v1.ClusterState;
import moe.a2a.v1.DescribeClusterRequest;
import moe.a2a.v1.DescribeModelRequest;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import moe.a2a.v1.ModelInfo;
import moe.a2a.v1.MoeServiceGrpc;
import moe.a2a.v1.RouteRequest;
import moe.a2a.v1.RouteResponse;
import moe.a2a.v1.StepStats;
import org.jspecify.annotations.Nullable;

/**
 * MoeService: validates on the calling gRPC thread, hands Forward to the step scheduler, and
 * answers when the step completes. Route is computed here, without the data plane.
 */
public final class MoeGrpcService extends MoeServiceGrpc.MoeServiceImplBase {
    private final ModelConfig model;
    private final LayerPlacements placements;
    private final StepScheduler scheduler;
    private final RequestDecoder decoder;
    private final TokenRouter router;

    /** What DescribeModel answers, but the placement versions, which change while serving. */
    private final ModelInfo info;

    private final RankGroup group;
    private final ClusterWatch watch;

    /**
     * @param group the ranks, for the model, its placements, the transport and hosts DescribeModel
     *     reports and the ranks' conditions DescribeCluster reports
     * @param watch keeps WatchCluster calls up to date; its owner closes it
     */
    MoeGrpcService(
            WeightSource weights,
            RankGroup group,
            StepScheduler scheduler,
            ClusterWatch watch,
            double capacityFactor) {
        final ModelConfig model = group.model();
        final LayerPlacements placements = group.placements();
        this.group = group;
        this.watch = watch;
        this.model = model;
        this.placements = placements;
        this.scheduler = scheduler;
        this.decoder = new RequestDecoder(model, weights.layerNumbers());
        this.router = new TokenRouter(weights, model.topK());
        this.info =
                ModelInfo.newBuilder()
                        .setExperts(model.experts())
                        .setHidden(model.hidden())
                        .setFfn(model.ffn())
                        .setTopK(model.topK())
                        .setLayers(model.layers())
                        .setWorldSize(placements.get(0).worldSize())
                        .setDtype(TensorCodec.wire(weights.dtype()))
                        .setWeightsSource(weights.description())
                        .setDispatchDtype(model.dispatchDType().label())
                        .setSlots(placements.get(0).slots())
                        .setCapacityFactor(capacityFactor)
                        .setArchitecture(weights.architecture())
                        .setGate(weights.gateSpec().describe())
                        .addAllMoeLayers(Arrays.stream(weights.layerNumbers()).boxed().toList())
                        .setWeightFormat(weights.weightFormat())
                        .build();
    }

    @Override
    public void forward(ForwardRequest request, StreamObserver<ForwardResponse> responses) {
        answer(request, Context.current())
                .whenComplete(
                        (response, failure) -> {
                            if (failure != null) {
                                responses.onError(
                                        StatusMapping.toStatus(failure).asRuntimeException());
                            } else {
                                responses.onNext(response);
                                responses.onCompleted();
                            }
                        });
    }

    @Override
    public StreamObserver<ForwardRequest> forwardStream(StreamObserver<ForwardResponse> responses) {
        return new ForwardStream(this::answer, responses);
    }

    /**
     * The answer to {@code request}, made by a step; fails as the request does (validation
     * included). If {@code context} is cancelled while the request waits, it leaves the queue at
     * once.
     */
    CompletableFuture<ForwardResponse> answer(ForwardRequest request, Context context) {
        final long enqueued = System.nanoTime();
        try {
            throwIfAbandoned(context);
            int layer = decoder.moeLayer(request.getLayer());
            int numTokens = decoder.tokens(request.getHiddenStates(), "hidden_states");
            DType dtype = TensorCodec.dtype(request.getHiddenStates().getDtype(), "hidden_states");
            RoutingInput routing =
                    decoder.routing(
                            request.getTopk(),
                            request.getRouterLogits(),
                            request.hasTopk(),
                            request.hasRouterLogits(),
                            numTokens);
            if (numTokens == 0) {
                return CompletableFuture.completedFuture(
                        ForwardResponse.newBuilder()
                                .setHiddenStates(
                                        TensorCodec.tensor(
                                                dtype, 0, model.hidden(), ByteString.EMPTY))
                                .setStats(StepStats.newBuilder().setStepId(-1))
                                .build());
            }
            CompletableFuture<ForwardOutcome> result = new CompletableFuture<>();
            ForwardJob job =
                    new ForwardJob(
                            layer,
                            dtype,
                            numTokens,
                            request.getHiddenStates().getData(),
                            routing,
                            enqueued,
                            () -> abandonment(context),
                            result);
            scheduler.submit(job, AdmissionGate.takeSlot(context));
            // a call's context is cancelled when it ends, too; by then a step took the job
            context.addListener(
                    ended -> {
                        RuntimeException why = abandonment(ended);
                        if (why != null) {
                            scheduler.withdraw(job, why);
                        }
                    },
                    MoreExecutors.directExecutor());
            return result.thenApply(
                    outcome ->
                            ForwardResponse.newBuilder()
                                    .setHiddenStates(
                                            TensorCodec.tensor(
                                                    dtype,
                                                    numTokens,
                                                    model.hidden(),
                                                    outcome.output()))
                                    .setStats(stats(outcome))
                                    .build());
        } catch (RuntimeException | OutOfMemoryError e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public void route(RouteRequest request, StreamObserver<RouteResponse> responses) {
        try {
            throwIfAbandoned(Context.current());
            responses.onNext(route(request));
            responses.onCompleted();
        } catch (RuntimeException e) {
            responses.onError(StatusMapping.toStatus(e).asRuntimeException());
        }
    }

    @Override
    public void describeModel(DescribeModelRequest request, StreamObserver<ModelInfo> responses) {
        ModelInfo.Builder now =
                info.toBuilder()
                        .setPlacementVersion(placements.newestVersion())
                        .setTransport(group.transport().label())
                        .setHosts(group.hosts());
        for (Placement p : placements.all()) {
            now.addPlacementVersions(p.version());
        }
        responses.onNext(now.build());
        responses.onCompleted();
    }

    @Override
    public void describeCluster(
            DescribeClusterRequest request, StreamObserver<ClusterState> responses) {
        responses.onNext(group.describe());
        responses.onCompleted();
    }

    @Override
    public void watchCluster(
            DescribeClusterRequest request, StreamObserver<ClusterState> responses) {
        watch.watch(responses);
    }

    /**
     * Why the caller no longer wants the answer (its deadline passed, or it cancelled), or null
     * while it does.
     */
    private static @Nullable RuntimeException abandonment(Context context) {
        if (!context.isCancelled()) {
            return null;
        }
        Deadline deadline = context.getDeadline();
        return deadline != null && deadline.isExpired()
                ? Status.DEADLINE_EXCEEDED
                        .withDescription("deadline passed before the request's step")
                        .asRuntimeException()
                : Status.CANCELLED
                        .withDescription("the caller cancelled before the request's step")
                        .asRuntimeException();
    }

    /** A request that arrives already abandoned is refused before it is read or routed. */
    private static void throwIfAbandoned(Context context) {
        RuntimeException why = abandonment(context);
        if (why != null) {
            throw why;
        }
    }

    private RouteResponse route(RouteRequest request) {
        final int layer = decoder.moeLayer(request.getLayer());
        final int k = model.topK();
        int numTokens;
        if (request.hasHiddenStates()) {
            numTokens = decoder.tokens(request.getHiddenStates(), "hidden_states");
        } else if (request.hasTopk()) {
            numTokens = request.getTopk().getExpertIdsCount() / Math.max(1, k);
        } else if (request.hasRouterLogits()) {
            numTokens = decoder.logitsTokens(request.getRouterLogits());
        } else {
            throw new InvalidRequestException(
                    "hidden_states: unset (expected: [T, "
                            + model.hidden()
                            + "] when routing is unset)");
        }
        RoutingInput routing =
                decoder.routing(
                        request.getTopk(),
                        request.getRouterLogits(),
                        request.hasTopk(),
                        request.hasRouterLogits(),
                        numTokens);
        ByteBuffer tokens =
                ByteBuffer.allocateDirect(request.getHiddenStates().getData().size())
                        .order(ByteOrder.LITTLE_ENDIAN);
        request.getHiddenStates().getData().copyTo(tokens);
        DType dtype =
                routing instanceof RoutingInput.ModelGate
                        ? TensorCodec.dtype(request.getHiddenStates().getDtype(), "hidden_states")
                        : DType.FP32;
        int[] ids;
        float[] weights;
        synchronized (router) {
            router.route(layer, dtype, tokens, numTokens, routing);
            ids = Arrays.copyOf(router.ids(), numTokens * k);
            weights = Arrays.copyOf(router.weights(), numTokens * k);
        }
        // No home rank: a replica is chosen by the shares alone.
        Placement placement = placements.get(layer);
        DispatchLayout layout = new DispatchLayout(placement, -1);
        layout.compute(ids, numTokens, k);
        RouteResponse.Builder out = RouteResponse.newBuilder().setK(k);
        for (int i = 0; i < ids.length; i++) {
            out.addExpertIds(ids[i]).addWeights(weights[i]).addRanks(layout.chosenRank(i));
        }
        long[] perRank = layout.tokensPerRankCopy();
        long[] perExpert = layout.tokensPerExpertCopy();
        for (long v : perRank) {
            out.addTokensPerRank(v);
        }
        for (long v : perExpert) {
            out.addTokensPerExpert(v);
        }
        return out.setRankImbalance(Imbalance.maxOverMean(perRank))
                .setExpertImbalance(Imbalance.maxOverMean(perExpert))
                .setPlacementVersion(placement.version())
                .build();
    }

    private static StepStats stats(ForwardOutcome outcome) {
        StepStatsSnapshot s = outcome.step();
        StepStats.Builder b =
                StepStats.newBuilder()
                        .setStepId(s.stepId())
                        .setStepRequests(s.requests())
                        .setStepTokens(s.tokens())
                        .setPlacementVersion(s.placementVersion())
                        .setRouteUs(TimeUnit.NANOSECONDS.toMicros(s.routeNs()))
                        .setDispatchUs(TimeUnit.NANOSECONDS.toMicros(s.dispatchNs()))
                        .setExpertUs(TimeUnit.NANOSECONDS.toMicros(s.expertNs()))
                        .setCombineUs(TimeUnit.NANOSECONDS.toMicros(s.combineNs()))
                        .setQueueUs(TimeUnit.NANOSECONDS.toMicros(outcome.queueNs()))
                        .setMode(s.mode());
        for (long v : s.tokensPerRank()) {
            b.addTokensPerRank(v);
        }
        for (long v : s.remoteTokensPerRank()) {
            b.addRemoteTokensPerRank(v);
        }
        for (long v : s.pairsPerRank()) {
            b.addPairsPerRank(v);
        }
        for (long v : s.tokensPerExpert()) {
            b.addTokensPerExpert(v);
        }
        for (long v : s.droppedPerExpert()) {
            b.addCapacityDroppedPerExpert(v);
        }
        return b.build();
    }
}
