package moe.a2a.cli;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import moe.a2a.client.Tensors;
import moe.a2a.comm.DataPlane;
import moe.a2a.comm.nccl.NcclDataPlane;
import moe.a2a.comm.nccl.NcclTransportProvider;
import moe.a2a.control.cluster.ClusterListener;
import moe.a2a.control.cluster.RemoteCluster;
import moe.a2a.control.cluster.StepModes;
import moe.a2a.control.grpc.ClusterServer;
import moe.a2a.control.grpc.MoeServer;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SeededWeights;
import moe.a2a.experts.WeightSource;
import moe.a2a.experts.hf.HfCheckpoint;
import moe.a2a.gpu.Bf16Weights;
import moe.a2a.gpu.CheckTable;
import moe.a2a.gpu.GpuCheck;
import moe.a2a.kernels.DType;
import moe.a2a.protocol.TensorCodec;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import moe.a2a.v1.ModelSpec;
import moe.a2a.v1.MoeServiceGrpc;
import moe.a2a.worker.WorkerAgent;
import org.jspecify.annotations.Nullable;

/**
 * gpu-check's served path: a control plane and one worker in this process (gRPC in process, so the
 * bundle carries no Netty), the worker's rank on NCCL (world size 1), a client's answers checked
 * against the reference ({@link AnswerCheck}) on the weights the rank computes with (bf16 on a GPU
 * rank): bf16, fp16 and fp32 tokens in normal and low-latency mode, then the same after a placement
 * rollout that moves every expert to another slot; FP8 dispatch; an expert capacity; a checkpoint
 * with a gated shared expert. One row a cluster.
 */
final class GpuServedCheck implements GpuCheck.DeviceCheck {
    private static final int EXPERTS = 8;
    private static final int HIDDEN = 256;
    private static final int FFN = 512;
    private static final int TOP_K = 2;
    private static final int SHARED_FFN = 384;
    private static final long SEED = 31;
    private static final DType[] DTYPES = {DType.BF16, DType.FP16, DType.FP32};

    /** How long a worker's group may take to form: NCCL's init, kernels compiled, weights up. */
    private static final int FORM_SECONDS = 60;

    /**
     * A request's deadline: a step of this check's model takes milliseconds, so a wedged one fails
     * its cluster's row here, not at the control plane's step timeout (minutes of the budget).
     */
    private static final int REQUEST_SECONDS = 20;

    private final IntFunction<DataPlane> plane;
    private final UnaryOperator<WeightSource> held;

    /**
     * Why the clusters after one whose worker's group did not form, or whose step wedged, are
     * skipped, or null: the cause is systematic (the device, NCCL), and each wait would spend
     * another deadline of a device check.
     */
    private @Nullable String skipping;

    /** On the device: NCCL's data plane, the weights rounded to bf16 as GPU ranks hold them. */
    GpuServedCheck() {
        this(NcclDataPlane::onDevice, Bf16Weights::new);
    }

    /**
     * @param plane the worker's data plane on a device
     * @param held the weights as the worker's rank computes with them, from the model's
     */
    GpuServedCheck(IntFunction<DataPlane> plane, UnaryOperator<WeightSource> held) {
        this.plane = plane;
        this.held = held;
    }

    @Override
    public void run(int device, CheckTable table) {
        WeightSource seeded = new SeededWeights(SEED, EXPERTS, HIDDEN, FFN, 1);
        serve(
                device,
                table,
                "bf16, fp16, fp32; normal and low-latency; a rollout",
                seeded,
                spec(DispatchDType.BF16).setSeed(SEED).build(),
                0,
                true);
        serve(
                device,
                table,
                "FP8 dispatch",
                seeded,
                spec(DispatchDType.FP8).setSeed(SEED).build(),
                0,
                false);
        serve(
                device,
                table,
                "expert capacity 1.0",
                seeded,
                spec(DispatchDType.BF16).setSeed(SEED).build(),
                1.0,
                false);
        serveSharedExpertCheckpoint(device, table);
    }

    /**
     * A Qwen2-MoE checkpoint with a gated shared expert, written to a temporary directory that the
     * worker reads as a {@code --model} directory, and removed afterwards.
     */
    private void serveSharedExpertCheckpoint(int device, CheckTable table) {
        String what = "a Qwen2-MoE checkpoint with a gated shared expert";
        Path dir = null;
        try {
            dir = Files.createTempDirectory("moe-a2a-gpu-check-");
            SharedExpertCheckpoint.write(dir, EXPERTS, HIDDEN, FFN, SHARED_FFN, TOP_K, SEED);
            try (HfCheckpoint checkpoint = HfCheckpoint.open(dir)) {
                serve(
                        device,
                        table,
                        what,
                        checkpoint,
                        spec(DispatchDType.BF16)
                                .setModelDir(dir.toAbsolutePath().toString())
                                .build(),
                        0,
                        false);
            }
        } catch (IOException | RuntimeException e) {
            e.printStackTrace(System.err);
            table.row("served: " + what, "failed: " + e, false);
        } finally {
            delete(dir);
        }
    }

    private static ModelSpec.Builder spec(DispatchDType dispatch) {
        return ModelSpec.newBuilder()
                .setExperts(EXPERTS)
                .setHidden(HIDDEN)
                .setFfn(FFN)
                .setTopK(TOP_K)
                .setLayers(1)
                .setDispatchDtype(dispatch.label());
    }

    /** Serves {@code weights}, which {@code spec} names for the worker, and checks its answers. */
    private void serve(
            int device,
            CheckTable table,
            String what,
            WeightSource weights,
            ModelSpec spec,
            double capacityFactor,
            boolean rollout) {
        if (skipping != null) {
            table.row("served: " + what, "skipped: " + skipping, false);
            return;
        }
        DispatchDType dispatch = DispatchDType.parse("dispatch_dtype", spec.getDispatchDtype());
        ModelConfig config = new ModelConfig(EXPERTS, HIDDEN, FFN, TOP_K, 1, dispatch);
        RemoteCluster cluster =
                new RemoteCluster(
                        config,
                        spec,
                        "gpu-check",
                        Placement.contiguous(EXPERTS, 1),
                        NcclTransportProvider.NCCL,
                        TimeUnit.SECONDS.toNanos(30),
                        TimeUnit.SECONDS.toNanos(30),
                        new ClusterListener() {
                            @Override
                            public void onServing(long epoch, long formedInNanos) {}

                            @Override
                            public void onNotServing(String reason) {}
                        });
        String clusterName = InProcessServerBuilder.generateName();
        String clientName = InProcessServerBuilder.generateName();
        WorkerAgent agent = null;
        Thread agentThread = null;
        DataPlane dataPlane = null;
        ManagedChannel channel = null;
        ManagedChannel client = null;
        ClusterServer clusterPort = null;
        MoeServer server = null;
        try {
            clusterPort = ClusterServer.start(InProcessServerBuilder.forName(clusterName), cluster);
            server =
                    MoeServer.start(
                            InProcessServerBuilder.forName(clientName),
                            cluster,
                            weights,
                            new MoeServer.Settings(
                                    8192,
                                    64,
                                    1 << 22,
                                    1 << 24,
                                    1,
                                    0,
                                    capacityFactor,
                                    null,
                                    new StepModes(StepModes.Choice.AUTO, 16)),
                            new SimpleMeterRegistry(),
                            true);
            channel = InProcessChannelBuilder.forName(clusterName).build();
            dataPlane = plane.apply(device);
            agent =
                    new WorkerAgent(
                            channel,
                            new WorkerAgent.Settings(
                                    "gpu-check-worker",
                                    0,
                                    "",
                                    Duration.ofSeconds(30),
                                    Duration.ofMillis(500),
                                    "gpu-check"),
                            List.of(dataPlane),
                            new SimpleMeterRegistry());
            agentThread = start(agent);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(FORM_SECONDS);
            while (cluster.healthy() < 1 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            if (cluster.healthy() < 1) {
                skipping = "the worker's group of \"" + what + "\" did not form";
                table.row(
                        "served: " + what,
                        "the worker's group did not form in " + FORM_SECONDS + " s",
                        false);
                return;
            }
            client = InProcessChannelBuilder.forName(clientName).build();
            MoeServiceGrpc.MoeServiceBlockingStub stub = MoeServiceGrpc.newBlockingStub(client);
            WeightSource reference = held.apply(weights);
            AnswerCheck check =
                    new AnswerCheck(
                            reference,
                            new ReferenceMoeLayer(reference),
                            EXPERTS,
                            HIDDEN,
                            TOP_K,
                            dispatch == DispatchDType.FP8,
                            capacityFactor,
                            1);
            Worst worst = new Worst();
            answers(stub, check, worst, 0);
            if (rollout) {
                Placement reversed = reversed(cluster.placements().get(0));
                cluster.stage(0, reversed).get(60, TimeUnit.SECONDS);
                cluster.activate(0, reversed);
                answers(stub, check, worst, 1);
            }
            table.row(
                    "served: " + what,
                    String.format(
                            Locale.ROOT,
                            "%d answers (%d low-latency), worst error %.2f of the client's"
                                    + " tolerance",
                            worst.answers,
                            worst.lowLatency,
                            worst.ratio),
                    worst.ratio <= 1 && worst.answers > 0 && worst.lowLatency > 0);
        } catch (Exception e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            if (e instanceof StatusRuntimeException s
                    && s.getStatus().getCode() == Status.Code.DEADLINE_EXCEEDED) {
                skipping = "a step of \"" + what + "\" passed its deadline";
            }
            e.printStackTrace(System.err);
            table.row("served: " + what, "failed: " + e, false);
        } finally {
            if (agent != null) {
                agent.close();
            }
            join(agentThread);
            if (dataPlane != null) {
                // the worker closed its rank on the data-plane thread, which has stopped: the
                // plane's last communicator is freed here, not left to the process's exit
                dataPlane.close();
            }
            if (channel != null) {
                channel.shutdownNow();
            }
            if (client != null) {
                client.shutdownNow();
            }
            if (server != null) {
                server.close();
            }
            if (clusterPort != null) {
                clusterPort.close();
            }
        }
    }

    /** The worst answer so far. */
    private static final class Worst {
        double ratio;
        int answers;
        int lowLatency;
    }

    /**
     * Requests a dtype and size, routed by a seeded top-k: 40 tokens (a normal step) and 2 (a
     * low-latency step, under the bound of 16), the latter three times with new tokens, so that its
     * steps are enqueued, captured as a CUDA graph, then replayed.
     */
    private static void answers(
            MoeServiceGrpc.MoeServiceBlockingStub stub, AnswerCheck check, Worst worst, int round) {
        int sent = 0;
        for (DType dtype : DTYPES) {
            for (int tokens : new int[] {2, 2, 2, 40}) {
                SplittableRandom random =
                        new SplittableRandom(SEED * 100 + round * 10L + 1000L * sent++);
                float[] x = new float[tokens * HIDDEN];
                for (int i = 0; i < x.length; i++) {
                    x[i] = (float) random.nextDouble(-1, 1);
                }
                int[] ids = new int[tokens * TOP_K];
                float[] w = new float[ids.length];
                for (int t = 0; t < tokens; t++) {
                    ids[t * TOP_K] = random.nextInt(EXPERTS);
                    ids[t * TOP_K + 1] =
                            (ids[t * TOP_K] + 1 + random.nextInt(EXPERTS - 1)) % EXPERTS;
                    w[t * TOP_K] = (float) random.nextDouble(0.2, 0.8);
                    w[t * TOP_K + 1] = 1 - w[t * TOP_K];
                }
                ForwardRequest request =
                        Tensors.request(
                                0,
                                TensorCodec.tensor(dtype, tokens, HIDDEN, x),
                                Tensors.topK(ids, w, TOP_K));
                ForwardResponse response =
                        stub.withDeadlineAfter(REQUEST_SECONDS, TimeUnit.SECONDS).forward(request);
                if (check.checkable(response)) {
                    worst.ratio = Math.max(worst.ratio, check.worstRatio(request, response));
                    worst.answers++;
                    worst.lowLatency += response.getStats().getMode().equals("low-latency") ? 1 : 0;
                }
            }
        }
    }

    /** {@code now} with every rank's slots in reverse order: every expert in another slot. */
    private static Placement reversed(Placement now) {
        int ranks = now.worldSize();
        int[][] experts = new int[ranks][];
        double[][] shares = new double[ranks][];
        for (int r = 0; r < ranks; r++) {
            int[] e = now.expertsOf(r);
            double[] s = now.sharesOf(r);
            experts[r] = new int[e.length];
            shares[r] = new double[s.length];
            for (int i = 0; i < e.length; i++) {
                experts[r][i] = e[e.length - 1 - i];
                shares[r][i] = s[s.length - 1 - i];
            }
        }
        return Placement.of(now.version() + 1, EXPERTS, experts, shares);
    }

    private static void delete(Path dir) {
        if (dir == null) {
            return;
        }
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.toList()) {
                Files.delete(f);
            }
            Files.delete(dir);
        } catch (IOException e) {
            System.err.println("gpu-check: could not remove " + dir + ": " + e);
        }
    }

    private static Thread start(WorkerAgent agent) {
        Thread t =
                new Thread(
                        () -> {
                            try {
                                agent.run();
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                        },
                        "gpu-check-worker");
        t.start();
        return t;
    }

    private static void join(Thread t) {
        if (t == null) {
            return;
        }
        try {
            t.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
