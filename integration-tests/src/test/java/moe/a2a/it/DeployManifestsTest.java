package moe.a2a.it;

import static moe.a2a.it.CliModel.enumOption;
import static moe.a2a.it.CliModel.option;
import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import moe.a2a.v1.ModelSpec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine.ParseResult;
import tools.jackson.databind.JsonNode;

/**
 * The Kubernetes manifests under {@code deploy/k8s}, checked against each other and against the CLI
 * they start, without a cluster. Every kustomization is rendered by the real kustomize ({@link
 * KustomizeBuild}), its objects read strictly by fabric8's Kubernetes model (a field the API does
 * not define fails), and each build is checked: flags exist in the picocli model of their
 * subcommand and parse once {@code $(VAR)} is expanded from the pod's environment; ports, probes
 * and scrape annotations use the CLI's default ports; Services select pods and target ports that
 * exist; one worker runs per rank; workers reach the control plane and each other, and offer the
 * data plane it runs.
 */
class DeployManifestsTest {
    private static final Path K8S =
            Path.of(System.getProperty("moe.a2a.it.deploy", "../deploy"))
                    .toAbsolutePath()
                    .normalize()
                    .resolve("k8s");
    private static final List<String> MODEL_FLAGS =
            List.of(
                    "--world-size",
                    "--experts",
                    "--hidden",
                    "--ffn",
                    "--layers",
                    "--top-k",
                    "--seed");
    private static final int GRPC_PORT =
            Integer.parseInt(CliModel.defaultOf("control-plane", "--port"));
    private static final int METRICS_PORT =
            Integer.parseInt(CliModel.defaultOf("control-plane", "--metrics-port"));

    @Test
    void shouldReferenceOnlyExistingFilesAndLeaveNoManifestUnreferenced() throws IOException {
        Set<Path> referenced = new HashSet<>();
        for (Path kustomization : KustomizeBuild.kustomizations(K8S)) {
            Path dir = kustomization.getParent();
            JsonNode k = KustomizeBuild.read(kustomization);
            for (JsonNode resource : k.path("resources").values()) {
                Path p = dir.resolve(resource.asString()).normalize();
                assertThat(p).as("%s: resource %s", kustomization, resource.asString()).exists();
                referenced.add(Files.isDirectory(p) ? p.resolve("kustomization.yaml") : p);
            }
            for (JsonNode patch : k.path("patches").values()) {
                assertThat(patch.has("path"))
                        .as("%s: every patch names a file (path:)", kustomization)
                        .isTrue();
                Path p = dir.resolve(patch.get("path").asString()).normalize();
                assertThat(p)
                        .as("%s: patch %s", kustomization, patch.get("path").asString())
                        .isRegularFile();
                referenced.add(p);
            }
        }
        try (Stream<Path> files = Files.walk(K8S)) {
            List<Path> manifests =
                    files.filter(
                                    p ->
                                            p.toString().endsWith(".yaml")
                                                    || p.toString().endsWith(".yml"))
                            .filter(p -> !p.getFileName().toString().equals("kustomization.yaml"))
                            .toList();
            assertThat(manifests).as("manifests under %s", K8S).isNotEmpty();
            assertThat(referenced)
                    .as("every manifest is listed by a kustomization")
                    .containsAll(manifests);
        }
    }

    @Test
    void shouldParseEveryManifestIntoTypedObjectsWithoutUnknownFields() throws IOException {
        for (Path kustomization : KustomizeBuild.kustomizations(K8S)) {
            for (Path file : KustomizeBuild.files(kustomization.getParent())) {
                HasMetadata resource = Manifests.resource(file);
                assertThat(Manifests.unknownFields(resource))
                        .as("%s: fields the Kubernetes API does not define", file)
                        .isEmpty();
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("builds")
    void shouldPassOnlyFlagsTheCliDefinesAndThatParseOnceExpanded(KustomizeBuild build) {
        for (Workload w : build.workloads()) {
            ParseResult parsed = w.parse();
            assertThat(parsed.commandSpec().name())
                    .as("%s: subcommand", w)
                    .isEqualTo(w.component());
            assertThat(w.container().getCommand())
                    .as("%s: command (the image's entrypoint runs moe-a2a)", w)
                    .isEmpty();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("builds")
    void shouldUseTheCliDefaultPortsForContainersProbesAndScrapeAnnotations(KustomizeBuild build) {
        Workload cp = build.workload("control-plane");
        ParseResult cpArgs = cp.parse();
        assertThat(cp.port("grpc"))
                .as("%s: port grpc = default of control-plane --port", cp)
                .isEqualTo(GRPC_PORT);
        assertThat(cp.port("metrics"))
                .as("%s: port metrics = default of --metrics-port", cp)
                .isEqualTo(METRICS_PORT);
        assertThat(option(cpArgs, "--port", Integer.class))
                .as("%s: --port", cp)
                .isEqualTo(GRPC_PORT);
        assertThat(option(cpArgs, "--metrics-port", Integer.class))
                .as("%s: --metrics-port", cp)
                .isEqualTo(METRICS_PORT);
        Probe readiness = cp.container().getReadinessProbe();
        assertThat(readiness).as("%s: readinessProbe", cp).isNotNull();
        assertThat(readiness.getGrpc())
                .as("%s: readinessProbe is a gRPC health check", cp)
                .isNotNull();
        assertThat(readiness.getGrpc().getPort())
                .as("%s: readinessProbe.grpc.port", cp)
                .isEqualTo(GRPC_PORT);

        Workload worker = build.workload("worker");
        ParseResult workerArgs = worker.parse();
        assertThat(worker.port("metrics"))
                .as("%s: port metrics = default of worker --metrics-port", worker)
                .isEqualTo(Integer.parseInt(CliModel.defaultOf("worker", "--metrics-port")));
        assertThat(option(workerArgs, "--metrics-port", Integer.class))
                .as("%s: --metrics-port", worker)
                .isEqualTo(METRICS_PORT);
        assertThat(option(workerArgs, "--data-port", Integer.class))
                .as("%s: --data-port = port data", worker)
                .isEqualTo(worker.port("data"));
        Probe liveness = worker.container().getLivenessProbe();
        assertThat(liveness).as("%s: livenessProbe", worker).isNotNull();
        assertThat(liveness.getHttpGet())
                .as("%s: livenessProbe is an HTTP GET (no gRPC server on a worker)", worker)
                .isNotNull();
        assertThat(liveness.getHttpGet().getPath())
                .as("%s: livenessProbe path", worker)
                .isEqualTo("/metrics");

        for (Workload w : build.workloads()) {
            for (Probe probe : w.probes()) {
                assertThat(w.probePort(probe))
                        .as("%s: every probe uses the gRPC or metrics port", w)
                        .isIn(GRPC_PORT, METRICS_PORT);
                if (probe.getHttpGet() != null) {
                    assertThat(w.probePort(probe))
                            .as("%s: HTTP probes go to /metrics", w)
                            .isEqualTo(METRICS_PORT);
                }
            }
            Map<String, String> annotations = w.template().getMetadata().getAnnotations();
            assertThat(annotations)
                    .as("%s: pod annotations", w)
                    .containsEntry("prometheus.io/scrape", "true")
                    .containsEntry("prometheus.io/port", Integer.toString(METRICS_PORT))
                    .containsEntry("prometheus.io/path", "/metrics");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("builds")
    void shouldLabelEverythingAndSelectExistingPodsAndPortsWithEveryService(KustomizeBuild build) {
        for (HasMetadata r : build.resources()) {
            assertThat(r.getMetadata().getLabels())
                    .as("%s %s: labels", r.getKind(), r.getMetadata().getName())
                    .containsEntry("app.kubernetes.io/name", "moe-a2a");
        }
        for (Workload w : build.workloads()) {
            assertThat(w.template().getMetadata().getLabels())
                    .as("%s: pod labels", w)
                    .containsEntry("app.kubernetes.io/name", "moe-a2a")
                    .containsEntry("app.kubernetes.io/component", w.component())
                    .containsAllEntriesOf(w.selector());
        }
        for (Service s : build.all(Service.class)) {
            String where = "Service " + s.getMetadata().getName();
            Workload target = build.selectedBy(s);
            for (ServicePort port : s.getSpec().getPorts()) {
                IntOrString targetPort =
                        port.getTargetPort() != null
                                ? port.getTargetPort()
                                : new IntOrString(port.getPort());
                assertThat(target.resolve(targetPort))
                        .as("%s: port %s targets a port of %s", where, port.getName(), target)
                        .isNotNull();
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("builds")
    void shouldRunOneWorkerPerRankWithTheRankFromThePodOrdinal(KustomizeBuild build) {
        Workload cp = build.workload("control-plane");
        Workload worker = build.workload("worker");
        assertThat(worker.resource())
                .as("%s: workers are a StatefulSet (stable ordinals and names)", worker)
                .isInstanceOf(StatefulSet.class);
        assertThat(cp.replicas()).as("%s: replicas (one control plane)", cp).isEqualTo(1);
        int worldSize = option(cp.parse(), "--world-size", Integer.class);
        assertThat(worker.replicas())
                .as("%s: replicas = the control plane's --world-size", worker)
                .isEqualTo(worldSize);
        for (String flag : MODEL_FLAGS) {
            assertThat(cp.sourceOf(flag))
                    .as("%s: %s comes from the model ConfigMap", cp, flag)
                    .startsWith("ConfigMap ");
        }
        String ref = cp.sourceOf("--world-size").substring("ConfigMap ".length());
        assertThat(build.configMap(ref.substring(0, ref.indexOf('/'))).getData())
                .as("%s: the world size in ConfigMap %s", build, ref)
                .containsEntry(
                        ref.substring(ref.indexOf('/') + 1), Integer.toString(worker.replicas()));
        assertThat(worker.sourceOf("--rank"))
                .as("%s: --rank", worker)
                .isEqualTo("fieldRef " + ContainerEnvironment.POD_INDEX_FIELD);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("builds")
    void shouldGiveWorkersPeerAddressesAndAControlPlaneAddressThatResolveBeforeAnyoneIsReady(
            KustomizeBuild build) {
        Workload worker = build.workload("worker");
        ParseResult args = worker.parse();
        String serviceName = ((StatefulSet) worker.resource()).getSpec().getServiceName();
        Service headless = build.service(serviceName);
        assertThat(headless.getSpec().getClusterIP())
                .as("Service %s: clusterIP (headless)", serviceName)
                .isEqualTo("None");
        assertThat(headless.getSpec().getPublishNotReadyAddresses())
                .as("Service %s: publishNotReadyAddresses", serviceName)
                .isEqualTo(Boolean.TRUE);
        assertThat(build.selectedBy(headless))
                .as("Service %s selects", serviceName)
                .isEqualTo(worker);
        assertThat(option(args, "--data-host", String.class))
                .as("%s: --data-host = <pod>.<serviceName>[.<namespace>...]", worker)
                .matches(Pattern.quote(worker.podName() + "." + serviceName) + "(\\..+)?");

        String target = option(args, "--control-plane", String.class);
        String host = target.substring(0, target.lastIndexOf(':'));
        int port = Integer.parseInt(target.substring(target.lastIndexOf(':') + 1));
        Service join = build.service(host);
        Workload cp = build.workload("control-plane");
        assertThat(build.selectedBy(join))
                .as("Service %s (--control-plane) selects", host)
                .isEqualTo(cp);
        assertThat(join.getSpec().getPublishNotReadyAddresses())
                .as(
                        "Service %s: publishNotReadyAddresses (the control plane is ready only after the workers joined)",
                        host)
                .isEqualTo(Boolean.TRUE);
        ServicePort servicePort =
                join.getSpec().getPorts().stream()
                        .filter(p -> p.getPort() == port)
                        .findFirst()
                        .orElseThrow(
                                () ->
                                        new AssertionError(
                                                "Service " + host + " has no port " + port));
        assertThat(cp.resolve(servicePort.getTargetPort()))
                .as("Service %s port %d targets the control plane's --cluster-port", host, port)
                .isEqualTo(option(cp.parse(), "--cluster-port", Integer.class));
    }

    // The control plane refuses a worker that does not offer its transport; auto offers tcp, and
    // nccl
    // when the worker's GPU probe succeeds, which only a GPU node can tell.
    @ParameterizedTest(name = "{0}")
    @MethodSource("builds")
    void shouldMakeEveryWorkerOfferTheTransportTheControlPlaneRuns(KustomizeBuild build) {
        Workload cp = build.workload("control-plane");
        String transport = enumOption(cp.parse(), "--transport");
        for (Workload w : build.workloads()) {
            if (w.component().equals("worker")) {
                assertThat(enumOption(w.parse(), "--transport"))
                        .as("%s: --transport (the control plane runs --transport=%s)", w, transport)
                        .isIn(transport, "auto");
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("builds")
    void shouldMakeWorkersExpectTheModelTheControlPlaneServes(KustomizeBuild build)
            throws ReflectiveOperationException {
        ParseResult cp = build.workload("control-plane").parse();
        Workload worker = build.workload("worker");
        String expected = option(worker.parse(), "--expect-model", String.class);
        if (expected.isEmpty()) {
            return;
        }
        ModelSpec.Builder spec =
                ModelSpec.newBuilder()
                        .setExperts(option(cp, "--experts", Integer.class))
                        .setHidden(option(cp, "--hidden", Integer.class))
                        .setFfn(option(cp, "--ffn", Integer.class))
                        .setTopK(option(cp, "--top-k", Integer.class))
                        .setLayers(option(cp, "--layers", Integer.class));
        Path weights = option(cp, "--weights", Path.class);
        if (weights != null) {
            spec.setWeightsPath(weights.toAbsolutePath().toString());
        } else {
            spec.setSeed(option(cp, "--seed", Long.class));
        }
        // The control plane computes the fingerprint in ModelOptions (package-private); call the
        // same code.
        Method fingerprint =
                Class.forName("moe.a2a.cli.ModelOptions")
                        .getDeclaredMethod("fingerprint", ModelSpec.class);
        fingerprint.setAccessible(true);
        assertThat(expected)
                .as("%s: --expect-model = the control plane's model fingerprint", worker)
                .isEqualTo(fingerprint.invoke(null, spec.build()));
    }

    @Test
    void shouldRunTcpInTheBaseAndGiveEachWorkerOneGpuTheGpuImageAndNcclInTheGpuOverlay() {
        KustomizeBuild base = KustomizeBuild.of(K8S, K8S.resolve("base"));
        KustomizeBuild gpu = KustomizeBuild.of(K8S, K8S.resolve("overlays/gpu"));
        assertThat(enumOption(base.workload("control-plane").parse(), "--transport"))
                .as("base: control plane --transport")
                .isEqualTo("tcp");
        assertThat(enumOption(base.workload("worker").parse(), "--transport"))
                .as("base: worker --transport")
                .isEqualTo("tcp");

        assertThat(enumOption(gpu.workload("control-plane").parse(), "--transport"))
                .as("overlays/gpu: control plane --transport")
                .isEqualTo("nccl");
        Workload worker = gpu.workload("worker");
        // nccl rather than auto: a worker whose GPU probe fails then exits saying why, instead of
        // offering only tcp and being refused by the control plane.
        assertThat(enumOption(worker.parse(), "--transport"))
                .as("%s: --transport", worker)
                .isEqualTo("nccl");
        ResourceRequirements resources = worker.container().getResources();
        assertThat(resources.getLimits())
                .as("%s: limits", worker)
                .containsEntry("nvidia.com/gpu", new Quantity("1"));
        assertThat(worker.container().getImage())
                .as("%s: image", worker)
                .isEqualTo("moe-a2a-gpu:0.1.0-SNAPSHOT");
        Container cp = gpu.workload("control-plane").container();
        assertThat(cp.getImage())
                .as("overlays/gpu: the control plane keeps the CPU image")
                .isEqualTo("moe-a2a:0.1.0-SNAPSHOT");
        assertThat(cp.getResources().getLimits())
                .as("overlays/gpu: control plane limits")
                .doesNotContainKey("nvidia.com/gpu");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("builds")
    void shouldPinEveryImageThroughTheKustomizationImages(KustomizeBuild build) {
        for (Workload w : build.workloads()) {
            String image = w.container().getImage();
            assertThat(image.contains(":") || image.contains("@"))
                    .as("%s: rendered image %s has a tag or a digest (else :latest)", w, image)
                    .isTrue();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("builds")
    void shouldRenderOnlyFieldsTheKubernetesApiDefines(KustomizeBuild build) {
        assertThat(build.resources()).as("%s: rendered objects", build).isNotEmpty();
        for (HasMetadata r : build.resources()) {
            assertThat(Manifests.unknownFields(r))
                    .as(
                            "%s: %s %s, fields the Kubernetes API does not define",
                            build, r.getKind(), r.getMetadata().getName())
                    .isEmpty();
        }
    }

    static List<KustomizeBuild> builds() throws IOException {
        List<KustomizeBuild> builds = new ArrayList<>();
        for (Path k : KustomizeBuild.kustomizations(K8S)) {
            builds.add(KustomizeBuild.of(K8S, k.getParent()));
        }
        return builds;
    }
}
