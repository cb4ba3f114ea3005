package moe.a2a.experts;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.RankThreads;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.comm.shm.ShmTestGroups;
import moe.a2a.dispatch.CapacityFilter;
import moe.a2a.dispatch.Gate;
import moe.a2a.dispatch.HostTopology;
import moe.a2a.dispatch.Placement;
import moe.a2a.dispatch.TestRoutings;
import moe.a2a.kernels.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

/** The distributed layer (ranks as threads) against the single-process reference. */
@Timeout(120)
class MoeLayerTest {
    static final int HIDDEN = 32;
    static final int FFN = 48;
    static final int LAYERS = 2;

    enum Routing {
        TOPK,
        LOGITS,
        MODEL_GATE,
        ONE_EXPERT
    }

    static List<Arguments> cases() {
        return List.of(
                Arguments.of(1, 8, 2, DType.FP32, Routing.TOPK, 9),
                Arguments.of(2, 8, 2, DType.BF16, Routing.LOGITS, 9),
                Arguments.of(3, 8, 2, DType.FP32, Routing.MODEL_GATE, 9),
                Arguments.of(4, 8, 2, DType.FP32, Routing.TOPK, 9),
                Arguments.of(4, 8, 2, DType.BF16, Routing.TOPK, 9),
                Arguments.of(4, 16, 4, DType.FP16, Routing.LOGITS, 9),
                Arguments.of(8, 16, 2, DType.FP32, Routing.LOGITS, 9),
                Arguments.of(8, 8, 2, DType.BF16, Routing.MODEL_GATE, 9),
                // fewer tokens than ranks: most ranks bring none
                Arguments.of(8, 8, 2, DType.FP32, Routing.TOPK, 1),
                // every token to the same experts: all but one rank receive nothing
                Arguments.of(4, 8, 2, DType.FP32, Routing.ONE_EXPERT, 9),
                Arguments.of(4, 8, 1, DType.BF16, Routing.ONE_EXPERT, 9));
    }

    @ParameterizedTest(name = "N={0} E={1} K={2} {3} {4} maxT={5}")
    @MethodSource("cases")
    void shouldMatchReferenceWhenRanksExchangeTokens(
            int n, int experts, int topK, DType dtype, Routing routing, int maxTokens)
            throws Exception {
        long seed =
                17L * n + experts * 3L + topK + dtype.ordinal() * 101L + routing.ordinal() * 1009L;
        ModelConfig model = new ModelConfig(experts, HIDDEN, FFN, topK, LAYERS);
        WeightSource weights = new SeededWeights(seed, experts, HIDDEN, FFN, LAYERS);
        runAndCompare(n, model, weights, dtype, routing, maxTokens, seed);
    }

    @Test
    void shouldMatchReferenceWhenMoreExpertsThanTokensAndRanksRepeatSteps() throws Exception {
        ModelConfig model = new ModelConfig(6, HIDDEN, FFN, 3, LAYERS);
        WeightSource weights = new SeededWeights(5, 6, HIDDEN, FFN, LAYERS);
        runAndCompare(4, model, weights, DType.FP32, Routing.TOPK, 3, 5);
    }

    /**
     * Two micro-batches: the halves' exchanges on the progress thread beside the other half's
     * experts; over shared memory (which receives in place) the step runs as one batch. Either way
     * the answers are the reference's, with ranks of 0, 1 and many tokens.
     */
    @ParameterizedTest(name = "N={0} {1} maxT={2} over {3}")
    @CsvSource({"2, BF16, 9, local", "4, FP32, 9, local", "4, FP32, 1, local", "3, FP16, 9, shm"})
    void shouldMatchReferenceWhenTheStepRunsAsTwoMicroBatches(
            int n, DType dtype, int maxTokens, String transport) throws Exception {
        long seed = 31L * n + dtype.ordinal() + maxTokens;
        ModelConfig model = new ModelConfig(8, HIDDEN, FFN, 2, LAYERS).withMicroBatches(2);
        WeightSource weights = new SeededWeights(seed, 8, HIDDEN, FFN, LAYERS);
        ShmTestGroups shm = new ShmTestGroups();
        try {
            Communicator[] comms = group(shm, transport, n);
            run(
                    n,
                    model,
                    weights,
                    weights,
                    dtype,
                    Routing.TOPK,
                    maxTokens,
                    seed,
                    (worker, rank) -> worker.rebind(comms[rank]));
        } finally {
            shm.closeAll();
        }
    }

    static void runAndCompare(
            int n,
            ModelConfig model,
            WeightSource weights,
            DType dtype,
            Routing routing,
            int maxTokens,
            long seed)
            throws Exception {
        run(n, model, weights, weights, dtype, routing, maxTokens, seed);
    }

    /** Serves with {@code served} and checks against the reference on {@code expected}. */
    static void runAndCompareAgainst(
            int n,
            ModelConfig model,
            WeightSource served,
            WeightSource expected,
            DType dtype,
            long seed)
            throws Exception {
        run(n, model, served, expected, dtype, Routing.MODEL_GATE, 9, seed);
    }

    private static void run(
            int n,
            ModelConfig model,
            WeightSource weights,
            WeightSource referenceWeights,
            DType dtype,
            Routing routing,
            int maxTokens,
            long seed)
            throws Exception {
        LocalGroup group = new LocalGroup(n);
        run(
                n,
                model,
                weights,
                referenceWeights,
                dtype,
                routing,
                maxTokens,
                seed,
                (worker, rank) -> worker.rebind(group.communicator(rank)));
    }

    /**
     * Ranks on several hosts: the exchanges cross hosts once per token and host over the rails and
     * fan out in each host's group ({@code moe.a2a.dispatch.HierarchicalDispatcher}); ranks dealt
     * to hosts round, as a cluster's workers join, and the host groups over shared memory in one
     * case.
     */
    @ParameterizedTest(name = "{0} hosts x {1} ranks, {2} {3}, host groups over {4}")
    @CsvSource({
        "2, 2, FP32, TOPK, local",
        "2, 2, BF16, LOGITS, shm",
        "3, 2, FP32, MODEL_GATE, local",
        "2, 3, FP16, TOPK, local"
    })
    void shouldMatchReferenceWhenRanksExchangeAcrossHosts(
            int hosts, int ranksPerHost, DType dtype, Routing routing, String hostTransport)
            throws Exception {
        int n = hosts * ranksPerHost;
        long seed = 41L * hosts + ranksPerHost + dtype.ordinal() * 7L;
        ModelConfig model = new ModelConfig(12, HIDDEN, FFN, 3, LAYERS);
        WeightSource weights = new SeededWeights(seed, 12, HIDDEN, FFN, LAYERS);
        int[] hostOf = new int[n];
        for (int r = 0; r < n; r++) {
            hostOf[r] = r % hosts;
        }
        HostTopology topology = HostTopology.of(hostOf);
        ShmTestGroups shm = new ShmTestGroups();
        try {
            Communicator[][] rails = new Communicator[ranksPerHost][];
            for (int l = 0; l < ranksPerHost; l++) {
                rails[l] = group(shm, "local", hosts);
            }
            Communicator[][] hostGroups = new Communicator[hosts][];
            for (int g = 0; g < hosts; g++) {
                hostGroups[g] = group(shm, hostTransport, ranksPerHost);
            }
            run(
                    n,
                    model,
                    weights,
                    weights,
                    dtype,
                    routing,
                    9,
                    seed,
                    (worker, rank) -> {
                        int g = topology.host(rank);
                        int l = topology.local(rank);
                        worker.rebind(rails[l][g], hostGroups[g][l], topology);
                    });
        } finally {
            shm.closeAll();
        }
    }

    /** A group of {@code n} ranks' communicators over {@code transport}: "shm" or "local". */
    private static Communicator[] group(ShmTestGroups shm, String transport, int n)
            throws Exception {
        if (transport.equals("shm")) {
            return shm.open(n, TimeUnit.SECONDS.toNanos(20));
        }
        LocalGroup group = new LocalGroup(n);
        Communicator[] comms = new Communicator[n];
        for (int r = 0; r < n; r++) {
            comms[r] = group.communicator(r);
        }
        return comms;
    }

    /** Gives a rank's worker its communicators. */
    private interface Binding {
        void bind(CpuRankRuntime worker, int rank);
    }

    private static void run(
            int n,
            ModelConfig model,
            WeightSource weights,
            WeightSource referenceWeights,
            DType dtype,
            Routing routing,
            int maxTokens,
            long seed,
            Binding binding)
            throws Exception {
        Placement placement = Placement.contiguous(model.experts(), n);
        SplittableRandom random = new SplittableRandom(seed);
        ReferenceMoeLayer reference = new ReferenceMoeLayer(referenceWeights);
        int steps = 2;
        Input[][] inputs = new Input[steps][n];
        for (int s = 0; s < steps; s++) {
            for (int r = 0; r < n; r++) {
                inputs[s][r] =
                        Input.random(
                                random, random.nextInt(0, maxTokens + 1), model, dtype, routing);
            }
        }
        List<float[][]> outputs =
                RankThreads.run(
                        n,
                        rank -> {
                            CpuRankRuntime worker =
                                    new CpuRankRuntime(model, weights, placement, rank);
                            binding.bind(worker, rank);
                            float[][] out = new float[steps][];
                            for (int s = 0; s < steps; s++) {
                                Input in = inputs[s][rank];
                                RankStepResult result =
                                        worker.step(
                                                s % model.layers(),
                                                dtype,
                                                in.tokens,
                                                in.numTokens,
                                                in.routing,
                                                CapacityFilter.UNLIMITED,
                                                0);
                                out[s] = new float[in.numTokens * model.hidden()];
                                dtype.decode(result.output(), 0, out[s], 0, out[s].length);
                            }
                            return out;
                        });
        for (int s = 0; s < steps; s++) {
            int layer = s % model.layers();
            for (int r = 0; r < n; r++) {
                Input in = inputs[s][r];
                float[] x = new float[in.numTokens * model.hidden()];
                dtype.decode(in.tokens, 0, x, 0, x.length);
                int[] ids = new int[in.numTokens * model.topK()];
                float[] w = new float[ids.length];
                if (in.routing instanceof RoutingInput.TopK given) {
                    ids = given.ids();
                    w = given.weights();
                } else if (in.routing instanceof RoutingInput.Logits given) {
                    Gate.softmaxTopK(
                            given.logits(), in.numTokens, model.experts(), model.topK(), ids, w);
                } else {
                    float[] logits = reference.gateLogits(layer, x, in.numTokens);
                    Gate.softmaxTopK(logits, in.numTokens, model.experts(), model.topK(), ids, w);
                }
                float[] expected = reference.forward(layer, x, in.numTokens, model.topK(), ids, w);
                float[] expectedInDtype = expected.clone();
                for (int i = 0; i < expectedInDtype.length; i++) {
                    expectedInDtype[i] = dtype.round(expected[i]);
                }
                LayerCheck.assertClose(
                        "seed=" + seed + " step=" + s + " rank=" + r,
                        dtype,
                        outputs.get(r)[s],
                        expectedInDtype,
                        model.hidden());
            }
        }
    }

    record Input(ByteBuffer tokens, int numTokens, RoutingInput routing) {
        static Input random(
                SplittableRandom random, int t, ModelConfig model, DType dtype, Routing routing) {
            int h = model.hidden();
            ByteBuffer tokens =
                    ByteBuffer.allocateDirect(Math.max(1, t * h * dtype.sizeBytes()))
                            .order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < t * h; i++) {
                dtype.put(tokens, i * dtype.sizeBytes(), (float) random.nextGaussian());
            }
            RoutingInput in;
            switch (routing) {
                case TOPK:
                    in =
                            new RoutingInput.TopK(
                                    TestRoutings.uniform(random, t, model.experts(), model.topK()),
                                    TestRoutings.weights(random, t, model.topK()));
                    break;
                case ONE_EXPERT:
                    in =
                            new RoutingInput.TopK(
                                    TestRoutings.concentrated(t, model.topK(), 0),
                                    TestRoutings.weights(random, t, model.topK()));
                    break;
                case LOGITS:
                    float[] logits = new float[t * model.experts()];
                    for (int i = 0; i < logits.length; i++) {
                        logits[i] = (float) random.nextGaussian() * 2;
                    }
                    in = new RoutingInput.Logits(logits);
                    break;
                default:
                    in = new RoutingInput.ModelGate();
            }
            return new Input(tokens, t, in);
        }
    }
}
