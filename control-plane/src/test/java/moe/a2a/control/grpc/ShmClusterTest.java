package moe.a2a.control.grpc;

import static moe.a2a.control.grpc.NcclClusterTest.E;
import static moe.a2a.control.grpc.NcclClusterTest.H;
import static moe.a2a.control.grpc.NcclClusterTest.I;
import static moe.a2a.control.grpc.NcclClusterTest.K;
import static moe.a2a.control.grpc.NcclClusterTest.WORLD;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import java.util.stream.Stream;
import moe.a2a.comm.Transport;
import moe.a2a.comm.shm.ShmDataPlane;
import moe.a2a.comm.shm.ShmFiles;
import moe.a2a.comm.shm.ShmTransportProvider;
import moe.a2a.comm.tcp.TcpDataPlane;
import moe.a2a.comm.tcp.TcpTransportProvider;
import moe.a2a.control.cluster.QuietListener;
import moe.a2a.control.cluster.RemoteCluster;
import moe.a2a.control.cluster.StragglerWatch;
import moe.a2a.control.cluster.TransportPolicy;
import moe.a2a.control.grpc.MoeGrpcServiceTest.Routing;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.v1.DescribeModelRequest;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ModelSpec;
import moe.a2a.v1.MoeServiceGrpc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Workers on the shared-memory data plane, end to end in one JVM: a control plane on --transport
 * auto, worker agents offering tcp and shm ({@link ShmDataPlane}). Workers of one shared-memory
 * domain run shm, with the reference layer's answers and no file left once they close; workers
 * whose shm directories differ (two domains) run tcp.
 */
@Timeout(120)
class ShmClusterTest {
    final SeededWeights weights = new SeededWeights(11, E, H, I, 1);

    @TempDir Path shm;

    @TempDir Path otherShm;

    @Test
    void autoShouldServeReferenceAnswersOverShmAndLeaveNoFiles() throws Exception {
        run(
                r -> shm,
                ShmTransportProvider.SHM,
                served -> {
                    assertThat(shmFiles(shm)).as("the group's files while it serves").isNotEmpty();
                    // each worker's experts, bf16 on the host as seeded: contiguous, E / WORLD a
                    // rank
                    for (int r = 0; r < WORLD; r++) {
                        MeterRegistry registry = served.agents.registry(r);
                        assertThat(weightBytes(registry, "moe.a2a.rank.expert.weight", "host"))
                                .isEqualTo(3.0 * H * I * 2);
                        assertThat(weightBytes(registry, "moe.a2a.rank.weight", "host"))
                                .isEqualTo(3.0 * H * I * 2 * E / WORLD);
                        assertThat(weightBytes(registry, "moe.a2a.rank.weight", "device")).isZero();
                    }
                });
        assertThat(shmFiles(shm)).as("files left after the workers closed").isEmpty();
    }

    @Test
    void autoShouldRunTcpWhenWorkersHaveDifferentShmDomains() throws Exception {
        run(r -> r == 0 ? shm : otherShm, TcpTransportProvider.TCP, served -> {});
        assertThat(shmFiles(shm)).isEmpty();
        assertThat(shmFiles(otherShm)).isEmpty();
    }

    /**
     * A shared-memory folder too small for a group's files (a 64 KiB tmpfs; the first regions take
     * 1 MiB): the workers offer shm (the folder is writable), the group cannot form over it, and
     * under auto it forms over tcp instead, saying why once, and serves right answers. Mounted when
     * the tests run as root (as CI does), else skipped.
     */
    @Test
    void autoShouldFormOverTcpWhenTheShmFolderIsFull() throws Exception {
        Path tiny = tinyFolder(shm);
        try {
            RemoteCluster cluster = autoCluster();
            try (ServedCluster served = serve(cluster, r -> tiny)) {
                served.agents.awaitFormed(cluster, "the group formed over tcp");
                assertThat(cluster.transport()).isEqualTo(TcpTransportProvider.TCP);
                assertThat(cluster.rebuilds()).as("the shm formation failed first").isPositive();
                ReferenceMoeLayer reference = new ReferenceMoeLayer(weights);
                SplittableRandom random = new SplittableRandom(37);
                for (int i = 0; i < 3; i++) {
                    ForwardRequest request =
                            MoeGrpcServiceTest.request(random, 0, 6 + i, DType.FP32, Routing.TOPK);
                    NcclClusterTest.assertMatchesReference(
                            "over tcp " + i, reference, request, served.stub.forward(request));
                }
            }
            assertThat(shmFiles(tiny)).isEmpty();
        } finally {
            run("umount", tiny.toString());
        }
    }

    /**
     * Four workers on two hosts (two folders), host 1's folder too small for a group's files: the
     * group planned across hosts cannot form its host group there; the worker says so and keeps its
     * session, and the group forms as one flat tcp group and answers right (before, the worker
     * ended its session, and rejoined into the same plan over and over).
     */
    @Test
    void autoShouldFormFlatTcpWhenOneHostsFolderIsFullAcrossHosts() throws Exception {
        Path tiny = tinyFolder(otherShm);
        int world = 4;
        try {
            RemoteCluster cluster = autoCluster(world);
            try (ServedCluster served = serve(cluster, world, r -> r % 2 == 0 ? shm : tiny)) {
                served.agents.awaitFormed(cluster, "the group formed over flat tcp");
                assertThat(cluster.transport()).isEqualTo(TcpTransportProvider.TCP);
                assertThat(cluster.hosts()).as("one flat group").isZero();
                ReferenceMoeLayer reference = new ReferenceMoeLayer(weights);
                SplittableRandom random = new SplittableRandom(41);
                for (int i = 0; i < 3; i++) {
                    ForwardRequest request =
                            MoeGrpcServiceTest.request(
                                    random, 0, 5 + 7 * i, DType.BF16, Routing.TOPK);
                    NcclClusterTest.assertMatchesReference(
                            "across hosts, over tcp " + i,
                            reference,
                            request,
                            served.stub.forward(request));
                }
            }
            assertThat(shmFiles(tiny)).isEmpty();
        } finally {
            run("umount", tiny.toString());
        }
    }

    /**
     * A 64 KiB tmpfs mounted at {@code parent}/tiny, too small for a group's first files (the
     * caller unmounts it); skips the test where it cannot be mounted (not root).
     */
    private static Path tinyFolder(Path parent) throws Exception {
        Path tiny = parent.resolve("tiny");
        Files.createDirectories(tiny);
        assumeTrue(
                "root".equals(System.getProperty("user.name"))
                        && run("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", tiny.toString()),
                "not root, or no mount: a small tmpfs is needed");
        return tiny;
    }

    private static boolean run(String... command) throws Exception {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor() == 0;
        } catch (IOException e) {
            return false;
        }
    }

    @Test
    void shmGroupShouldFormAgainWhenAWorkerIsReplaced() throws Exception {
        RemoteCluster cluster = autoCluster();
        try (ServedCluster served = serve(cluster, r -> shm)) {
            AgentThreads agents = served.agents;
            agents.awaitFormed(cluster, "two workers on shm");
            MoeServiceGrpc.MoeServiceBlockingStub stub = served.stub;
            ReferenceMoeLayer reference = new ReferenceMoeLayer(weights);
            SplittableRandom random = new SplittableRandom(31);
            ForwardRequest before =
                    MoeGrpcServiceTest.request(random, 0, 10, DType.FP32, Routing.TOPK);
            NcclClusterTest.assertMatchesReference(
                    "before", reference, before, stub.forward(before));

            agents.stop(1);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (cluster.healthy() > 0 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertThat(cluster.healthy()).as("the group broke when rank 1 left").isZero();
            assertThat(cluster.rebuilds()).isPositive();
            agents.add(
                    served.toCluster,
                    "worker-1-replacement",
                    1,
                    List.of(
                            new TcpDataPlane(served.tcp, "127.0.0.1", 0, null),
                            new ShmDataPlane(shm)));
            agents.awaitFormed(cluster, "the group formed again with the replacement");
            assertThat(cluster.transport()).isEqualTo(ShmTransportProvider.SHM);
            for (int i = 0; i < 3; i++) {
                ForwardRequest after =
                        MoeGrpcServiceTest.request(random, 0, 4 + 5 * i, DType.BF16, Routing.TOPK);
                NcclClusterTest.assertMatchesReference(
                        "after " + i, reference, after, stub.forward(after));
            }
            assertThat(shmFiles(shm))
                    .as("only the current group's files: rank r's control and region")
                    .hasSize(2 * WORLD);
        }
        assertThat(shmFiles(shm)).isEmpty();
    }

    private interface Check {
        void run(ServedCluster served) throws Exception;
    }

    private static double weightBytes(MeterRegistry registry, String meter, String where) {
        return registry.get(meter).tag("where", where).gauge().value();
    }

    private void run(IntFunction<Path> dirs, Transport expected, Check serving) throws Exception {
        RemoteCluster cluster = autoCluster();
        try (ServedCluster served = serve(cluster, dirs)) {
            served.agents.awaitFormed(cluster, "two workers offering tcp and shm");
            assertThat(cluster.transport()).isEqualTo(expected);
            MoeServiceGrpc.MoeServiceBlockingStub stub = served.stub;
            assertThat(stub.describeModel(DescribeModelRequest.getDefaultInstance()).getTransport())
                    .isEqualTo(expected.label());
            ReferenceMoeLayer reference = new ReferenceMoeLayer(weights);
            for (DType dtype : new DType[] {DType.BF16, DType.FP32}) {
                for (int round = 0; round < 3; round++) {
                    SplittableRandom random =
                            new SplittableRandom(700 + round * 7L + dtype.ordinal());
                    ForwardRequest request =
                            MoeGrpcServiceTest.request(
                                    random, 0, 3 + 9 * round, dtype, Routing.TOPK);
                    NcclClusterTest.assertMatchesReference(
                            expected + " " + dtype + " round " + round,
                            reference,
                            request,
                            stub.forward(request));
                }
            }
            serving.run(served);
        }
    }

    /** The cluster served, its workers offering tcp and shm (rank r's files in {@code dirs(r)}). */
    private ServedCluster serve(RemoteCluster cluster, IntFunction<Path> dirs) throws Exception {
        return serve(cluster, WORLD, dirs);
    }

    private ServedCluster serve(RemoteCluster cluster, int world, IntFunction<Path> dirs)
            throws Exception {
        return ServedCluster.start(
                cluster,
                weights,
                world,
                (tcp, r) ->
                        List.of(
                                new TcpDataPlane(tcp, "127.0.0.1", 0, null),
                                new ShmDataPlane(dirs.apply(r))));
    }

    private static RemoteCluster autoCluster() {
        return autoCluster(WORLD);
    }

    private static RemoteCluster autoCluster(int world) {
        ModelSpec spec = NcclClusterTest.spec(11);
        return new RemoteCluster(
                new ModelConfig(E, H, I, K, 1),
                spec,
                "test",
                Placement.contiguous(E, world),
                TransportPolicy.AUTO,
                TimeUnit.SECONDS.toNanos(10),
                TimeUnit.SECONDS.toNanos(30),
                new QuietListener(),
                new StragglerWatch(StragglerWatch.Settings.DEFAULT, world, null));
    }

    static List<String> shmFiles(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith(ShmFiles.PREFIX))
                    .toList();
        }
    }
}
