package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.EnvFromSource;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.PodTemplateSpec;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import moe.a2a.cli.Main;
import moe.a2a.v1.ModelSpec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;
import picocli.CommandLine.ParseResult;
import tools.jackson.databind.JsonNode;
import tools.jackson.dataformat.yaml.YAMLMapper;

/**
 * The Kubernetes manifests under {@code deploy/k8s}, checked against each other and against the
 * CLI they start, without a cluster. Every kustomization is built here the way kustomize would for
 * the features they use (resources, strategic merge patches of workloads and ConfigMaps, replicas,
 * images) into fabric8 model objects, and each build is checked: flags exist in the picocli model
 * of their subcommand and parse once {@code $(VAR)} is expanded from the pod's environment; ports,
 * probes and scrape annotations use the CLI's default ports; Services select pods and target
 * ports that exist; one worker runs per rank; workers reach the control plane and each other.
 * A kustomization field this builder does not model fails the test rather than being ignored.
 */
class DeployManifestsTest {
    private static final Path DEPLOY = Path.of(System.getProperty("moe.a2a.it.deploy", "../deploy")).toAbsolutePath().normalize();
    private static final Path K8S = DEPLOY.resolve("k8s");
    private static final KubernetesSerialization SERIALIZATION = new KubernetesSerialization();
    private static final YAMLMapper YAML = new YAMLMapper();
    private static final Set<String> KUSTOMIZATION_FIELDS = Set.of("apiVersion", "kind", "resources", "patches", "images", "replicas");
    private static final String POD_INDEX_FIELD = "metadata.labels['apps.kubernetes.io/pod-index']";
    private static final Pattern VAR_REF = Pattern.compile("\\$\\(([A-Za-z_][A-Za-z0-9_]*)\\)");
    private static final List<String> MODEL_FLAGS = List.of("--world-size", "--experts", "--hidden", "--ffn", "--layers", "--top-k", "--seed");
    private static final int GRPC_PORT = Integer.parseInt(cliDefault("control-plane", "--port"));
    private static final int METRICS_PORT = Integer.parseInt(cliDefault("control-plane", "--metrics-port"));

    @Test
    void shouldReferenceOnlyExistingFilesAndLeaveNoManifestUnreferenced() throws IOException {
        Set<Path> referenced = new HashSet<>();
        for (Path kustomization : kustomizations()) {
            Path dir = kustomization.getParent();
            JsonNode k = YAML.readTree(kustomization.toFile());
            assertThat(k.propertyNames()).as("%s: fields this test models (extend it for others)", kustomization)
                    .allMatch(KUSTOMIZATION_FIELDS::contains);
            for (JsonNode resource : k.path("resources").values()) {
                Path p = dir.resolve(resource.asString()).normalize();
                assertThat(p).as("%s: resource %s", kustomization, resource.asString()).exists();
                referenced.add(Files.isDirectory(p) ? p.resolve("kustomization.yaml") : p);
            }
            for (JsonNode patch : k.path("patches").values()) {
                assertThat(patch.has("path")).as("%s: every patch names a file (path:)", kustomization).isTrue();
                Path p = dir.resolve(patch.get("path").asString()).normalize();
                assertThat(p).as("%s: patch %s", kustomization, patch.get("path").asString()).isRegularFile();
                referenced.add(p);
            }
        }
        try (Stream<Path> files = Files.walk(K8S)) {
            List<Path> manifests = files.filter(p -> p.toString().endsWith(".yaml") || p.toString().endsWith(".yml"))
                    .filter(p -> !p.getFileName().toString().equals("kustomization.yaml")).toList();
            assertThat(manifests).as("manifests under %s", K8S).isNotEmpty();
            assertThat(referenced).as("every manifest is listed by a kustomization").containsAll(manifests);
        }
    }

    @Test
    void shouldParseEveryManifestIntoTypedObjectsWithoutUnknownFields() throws IOException {
        for (Path kustomization : kustomizations()) {
            for (Path file : Build.files(kustomization.getParent())) {
                HasMetadata resource = parse(file);
                List<String> unknown = new ArrayList<>();
                findUnknownFields(resource, resource.getKind(), unknown, 0);
                assertThat(unknown).as("%s: fields the Kubernetes API does not define", file).isEmpty();
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("builds")
    void shouldPassOnlyFlagsTheCliDefinesAndThatParseOnceExpanded(Build build) {
        for (Workload w : build.workloads()) {
            ParseResult parsed = w.parse();
            assertThat(parsed.commandSpec().name()).as("%s: subcommand", w).isEqualTo(w.component());
            assertThat(w.container().getCommand()).as("%s: command (the image's entrypoint runs moe-a2a)", w).isEmpty();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("builds")
    void shouldUseTheCliDefaultPortsForContainersProbesAndScrapeAnnotations(Build build) {
        Workload cp = build.workload("control-plane");
        ParseResult cpArgs = cp.parse();
        assertThat(cp.port("grpc")).as("%s: port grpc = default of control-plane --port", cp).isEqualTo(GRPC_PORT);
        assertThat(cp.port("metrics")).as("%s: port metrics = default of --metrics-port", cp).isEqualTo(METRICS_PORT);
        assertThat(option(cpArgs, "--port", Integer.class)).as("%s: --port", cp).isEqualTo(GRPC_PORT);
        assertThat(option(cpArgs, "--metrics-port", Integer.class)).as("%s: --metrics-port", cp).isEqualTo(METRICS_PORT);
        Probe readiness = cp.container().getReadinessProbe();
        assertThat(readiness).as("%s: readinessProbe", cp).isNotNull();
        assertThat(readiness.getGrpc()).as("%s: readinessProbe is a gRPC health check", cp).isNotNull();
        assertThat(readiness.getGrpc().getPort()).as("%s: readinessProbe.grpc.port", cp).isEqualTo(GRPC_PORT);

        Workload worker = build.workload("worker");
        ParseResult workerArgs = worker.parse();
        assertThat(worker.port("metrics")).as("%s: port metrics = default of worker --metrics-port", worker)
                .isEqualTo(Integer.parseInt(cliDefault("worker", "--metrics-port")));
        assertThat(option(workerArgs, "--metrics-port", Integer.class)).as("%s: --metrics-port", worker).isEqualTo(METRICS_PORT);
        assertThat(option(workerArgs, "--data-port", Integer.class)).as("%s: --data-port = port data", worker)
                .isEqualTo(worker.port("data"));
        Probe liveness = worker.container().getLivenessProbe();
        assertThat(liveness).as("%s: livenessProbe", worker).isNotNull();
        assertThat(liveness.getHttpGet()).as("%s: livenessProbe is an HTTP GET (no gRPC server on a worker)", worker).isNotNull();
        assertThat(liveness.getHttpGet().getPath()).as("%s: livenessProbe path", worker).isEqualTo("/metrics");

        for (Workload w : build.workloads()) {
            for (Probe probe : w.probes()) {
                assertThat(w.probePort(probe)).as("%s: every probe uses the gRPC or metrics port", w).isIn(GRPC_PORT, METRICS_PORT);
                if (probe.getHttpGet() != null) {
                    assertThat(w.probePort(probe)).as("%s: HTTP probes go to /metrics", w).isEqualTo(METRICS_PORT);
                }
            }
            Map<String, String> annotations = w.template().getMetadata().getAnnotations();
            assertThat(annotations).as("%s: pod annotations", w).containsEntry("prometheus.io/scrape", "true")
                    .containsEntry("prometheus.io/port", Integer.toString(METRICS_PORT))
                    .containsEntry("prometheus.io/path", "/metrics");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("builds")
    void shouldLabelEverythingAndSelectExistingPodsAndPortsWithEveryService(Build build) {
        for (HasMetadata r : build.resources()) {
            assertThat(r.getMetadata().getLabels()).as("%s %s: labels", r.getKind(), r.getMetadata().getName())
                    .containsEntry("app.kubernetes.io/name", "moe-a2a");
        }
        for (Workload w : build.workloads()) {
            assertThat(w.template().getMetadata().getLabels()).as("%s: pod labels", w)
                    .containsEntry("app.kubernetes.io/name", "moe-a2a").containsEntry("app.kubernetes.io/component", w.component())
                    .containsAllEntriesOf(w.selector());
        }
        for (Service s : build.all(Service.class)) {
            String where = "Service " + s.getMetadata().getName();
            Workload target = build.selectedBy(s);
            for (ServicePort port : s.getSpec().getPorts()) {
                IntOrString targetPort = port.getTargetPort() != null ? port.getTargetPort() : new IntOrString(port.getPort());
                assertThat(target.resolve(targetPort)).as("%s: port %s targets a port of %s", where, port.getName(), target).isNotNull();
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("builds")
    void shouldRunOneWorkerPerRankWithTheRankFromThePodOrdinal(Build build) {
        Workload cp = build.workload("control-plane");
        Workload worker = build.workload("worker");
        assertThat(worker.resource()).as("%s: workers are a StatefulSet (stable ordinals and names)", worker).isInstanceOf(StatefulSet.class);
        assertThat(cp.replicas()).as("%s: replicas (one control plane)", cp).isEqualTo(1);
        int worldSize = option(cp.parse(), "--world-size", Integer.class);
        assertThat(worker.replicas()).as("%s: replicas = the control plane's --world-size", worker).isEqualTo(worldSize);
        for (String flag : MODEL_FLAGS) {
            assertThat(cp.sourceOf(flag)).as("%s: %s comes from the model ConfigMap", cp, flag).startsWith("ConfigMap ");
        }
        String ref = cp.sourceOf("--world-size").substring("ConfigMap ".length());
        assertThat(build.configMap(ref.substring(0, ref.indexOf('/'))).getData()).as("%s: the world size in ConfigMap %s", build, ref)
                .containsEntry(ref.substring(ref.indexOf('/') + 1), Integer.toString(worker.replicas()));
        assertThat(worker.sourceOf("--rank")).as("%s: --rank", worker).isEqualTo("fieldRef " + POD_INDEX_FIELD);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("builds")
    void shouldGiveWorkersPeerAddressesAndAControlPlaneAddressThatResolveBeforeAnyoneIsReady(Build build) {
        Workload worker = build.workload("worker");
        ParseResult args = worker.parse();
        String serviceName = ((StatefulSet) worker.resource()).getSpec().getServiceName();
        Service headless = build.service(serviceName);
        assertThat(headless.getSpec().getClusterIP()).as("Service %s: clusterIP (headless)", serviceName).isEqualTo("None");
        assertThat(headless.getSpec().getPublishNotReadyAddresses()).as("Service %s: publishNotReadyAddresses", serviceName)
                .isEqualTo(Boolean.TRUE);
        assertThat(build.selectedBy(headless)).as("Service %s selects", serviceName).isEqualTo(worker);
        assertThat(option(args, "--data-host", String.class)).as("%s: --data-host = <pod>.<serviceName>[.<namespace>...]", worker)
                .matches(Pattern.quote(worker.podName() + "." + serviceName) + "(\\..+)?");

        String target = option(args, "--control-plane", String.class);
        String host = target.substring(0, target.lastIndexOf(':'));
        int port = Integer.parseInt(target.substring(target.lastIndexOf(':') + 1));
        Service join = build.service(host);
        Workload cp = build.workload("control-plane");
        assertThat(build.selectedBy(join)).as("Service %s (--control-plane) selects", host).isEqualTo(cp);
        assertThat(join.getSpec().getPublishNotReadyAddresses())
                .as("Service %s: publishNotReadyAddresses (the control plane is ready only after the workers joined)", host)
                .isEqualTo(Boolean.TRUE);
        ServicePort servicePort = join.getSpec().getPorts().stream().filter(p -> p.getPort() == port).findFirst()
                .orElseThrow(() -> new AssertionError("Service " + host + " has no port " + port));
        assertThat(cp.resolve(servicePort.getTargetPort())).as("Service %s port %d targets gRPC", host, port).isEqualTo(GRPC_PORT);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("builds")
    void shouldMakeWorkersExpectTheModelTheControlPlaneServes(Build build) throws ReflectiveOperationException {
        ParseResult cp = build.workload("control-plane").parse();
        Workload worker = build.workload("worker");
        String expected = option(worker.parse(), "--expect-model", String.class);
        if (expected.isEmpty()) {
            return;
        }
        ModelSpec.Builder spec = ModelSpec.newBuilder().setExperts(option(cp, "--experts", Integer.class))
                .setHidden(option(cp, "--hidden", Integer.class)).setFfn(option(cp, "--ffn", Integer.class))
                .setTopK(option(cp, "--top-k", Integer.class)).setLayers(option(cp, "--layers", Integer.class));
        Path weights = option(cp, "--weights", Path.class);
        if (weights != null) {
            spec.setWeightsPath(weights.toAbsolutePath().toString());
        } else {
            spec.setSeed(option(cp, "--seed", Long.class));
        }
        // The control plane computes the fingerprint in ModelOptions (package-private); call the same code.
        Method fingerprint = Class.forName("moe.a2a.cli.ModelOptions").getDeclaredMethod("fingerprint", ModelSpec.class);
        fingerprint.setAccessible(true);
        assertThat(expected).as("%s: --expect-model = the control plane's model fingerprint", worker)
                .isEqualTo(fingerprint.invoke(null, spec.build()));
    }

    @Test
    void shouldGiveEachWorkerOneGpuTheGpuImageAndNcclInTheGpuOverlay() {
        Build base = Build.of(K8S.resolve("base"));
        Build gpu = Build.of(K8S.resolve("overlays/gpu"));
        assertThat(String.valueOf(option(base.workload("worker").parse(), "--transport", Object.class)))
                .as("base: worker --transport").isEqualToIgnoringCase("tcp");

        Workload worker = gpu.workload("worker");
        assertThat(String.valueOf(option(worker.parse(), "--transport", Object.class))).as("%s: --transport", worker)
                .isEqualToIgnoringCase("nccl");
        ResourceRequirements resources = worker.container().getResources();
        assertThat(resources.getLimits()).as("%s: limits", worker).containsEntry("nvidia.com/gpu", new Quantity("1"));
        assertThat(worker.container().getImage()).as("%s: image", worker).isEqualTo("moe-a2a-gpu");
        Container cp = gpu.workload("control-plane").container();
        assertThat(cp.getImage()).as("overlays/gpu: the control plane keeps the CPU image").isEqualTo("moe-a2a");
        assertThat(cp.getResources().getLimits()).as("overlays/gpu: control plane limits").doesNotContainKey("nvidia.com/gpu");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("builds")
    void shouldPinEveryImageThroughTheKustomizationImages(Build build) {
        for (Workload w : build.workloads()) {
            String image = w.container().getImage();
            assertThat(image.contains(":") || image.contains("@") || build.images().contains(image))
                    .as("%s: image %s has a tag, or an images: entry of the kustomization sets one (else :latest)", w, image).isTrue();
        }
    }

    static List<Build> builds() throws IOException {
        List<Build> builds = new ArrayList<>();
        for (Path k : kustomizations()) {
            builds.add(Build.of(k.getParent()));
        }
        return builds;
    }

    private static List<Path> kustomizations() throws IOException {
        assertThat(K8S).as("deploy/k8s (system property moe.a2a.it.deploy)").isDirectory();
        try (Stream<Path> files = Files.walk(K8S)) {
            return files.filter(p -> p.getFileName().toString().equals("kustomization.yaml")).sorted().toList();
        }
    }

    private static HasMetadata parse(Path file) {
        Object parsed;
        try (InputStream in = Files.newInputStream(file)) {
            parsed = SERIALIZATION.unmarshal(in);
        } catch (IOException | RuntimeException e) {
            throw new AssertionError(file + ": not a Kubernetes resource: " + e.getMessage(), e);
        }
        assertThat(parsed).as("%s: one typed resource per file", file).isInstanceOf(HasMetadata.class)
                .isNotInstanceOf(GenericKubernetesResource.class);
        return (HasMetadata) parsed;
    }

    /** fabric8 keeps fields it does not know in additionalProperties; any there is a typo or a misplaced field. */
    private static void findUnknownFields(Object node, String path, List<String> unknown, int depth) {
        if (node == null || depth > 40) {
            return;
        }
        if (node instanceof Collection<?> list) {
            int i = 0;
            for (Object e : list) {
                findUnknownFields(e, path + "[" + i++ + "]", unknown, depth + 1);
            }
        } else if (node instanceof Map<?, ?> map) {
            map.forEach((k, v) -> findUnknownFields(v, path + "." + k, unknown, depth + 1));
        } else if (node.getClass().getName().startsWith("io.fabric8.kubernetes.api.model")) {
            for (Method getter : node.getClass().getMethods()) {
                if (getter.getParameterCount() != 0 || !getter.getName().startsWith("get") || getter.getDeclaringClass() == Object.class) {
                    continue;
                }
                Object value;
                try {
                    value = getter.invoke(node);
                } catch (InvocationTargetException e) {
                    unknown.add(path + "." + getter.getName() + "(): " + e.getCause());
                    continue;
                } catch (IllegalAccessException e) {
                    continue;
                }
                if (getter.getName().equals("getAdditionalProperties")) {
                    if (value instanceof Map<?, ?> extra && !extra.isEmpty()) {
                        unknown.add(path + ": " + extra.keySet());
                    }
                } else {
                    findUnknownFields(value, path + "." + getter.getName().substring(3), unknown, depth + 1);
                }
            }
        }
    }

    /** The value a subcommand ends up with for {@code name} (the default when not given). */
    private static <T> T option(ParseResult parsed, String name, Class<T> type) {
        CommandLine.Model.OptionSpec spec = parsed.commandSpec().findOption(name);
        assertThat(spec).as("moe-a2a %s defines %s", parsed.commandSpec().name(), name).isNotNull();
        return type.cast(spec.getValue());
    }

    private static CommandLine cli() {
        return new CommandLine(new Main()).setCaseInsensitiveEnumValuesAllowed(true);
    }

    private static String cliDefault(String subcommand, String option) {
        return cli().getSubcommands().get(subcommand).getCommandSpec().findOption(option).defaultValue();
    }

    /** One kustomization, built: its resources (after patches and replicas) and the images it retags. */
    record Build(Path dir, List<HasMetadata> resources, Set<String> images) {
        static Build of(Path dir) {
            JsonNode k = YAML.readTree(dir.resolve("kustomization.yaml").toFile());
            List<HasMetadata> resources = new ArrayList<>();
            Set<String> images = new HashSet<>();
            for (JsonNode entry : k.path("resources").values()) {
                Path p = dir.resolve(entry.asString()).normalize();
                assertThat(p).as("%s: resource %s", dir, entry.asString()).exists();
                if (Files.isDirectory(p)) {
                    Build base = of(p);
                    base.resources().forEach(r -> resources.add(SERIALIZATION.clone(r)));
                    images.addAll(base.images());
                } else {
                    resources.add(parse(p));
                }
            }
            for (JsonNode patch : k.path("patches").values()) {
                assertThat(patch.has("target")).as("%s: patches with target: (not modelled here)", dir).isFalse();
                Path p = dir.resolve(patch.path("path").asString()).normalize();
                assertThat(p).as("%s: patch %s", dir, patch.path("path").asString()).isRegularFile();
                Patches.apply(dir.toString(), resources, parse(p));
            }
            for (JsonNode replicas : k.path("replicas").values()) {
                HasMetadata r = Patches.find(dir.toString(), resources, null, replicas.path("name").asString());
                Patches.setReplicas(r, replicas.path("count").asInt());
            }
            for (JsonNode image : k.path("images").values()) {
                images.add(image.path("name").asString());
            }
            return new Build(dir, resources, images);
        }

        /** The manifest files of this kustomization itself (not of the bases it includes). */
        static List<Path> files(Path dir) {
            JsonNode k = YAML.readTree(dir.resolve("kustomization.yaml").toFile());
            List<Path> files = new ArrayList<>();
            Stream.concat(k.path("resources").values().stream(), k.path("patches").values().stream().map(p -> p.path("path")))
                    .map(n -> dir.resolve(n.asString()).normalize()).filter(Files::isRegularFile).forEach(files::add);
            return files;
        }

        <T extends HasMetadata> List<T> all(Class<T> kind) {
            return resources.stream().filter(kind::isInstance).map(kind::cast).toList();
        }

        List<Workload> workloads() {
            List<Workload> workloads = new ArrayList<>();
            all(Deployment.class).forEach(d -> workloads.add(new Workload(this, d, d.getSpec().getTemplate(),
                    d.getSpec().getSelector().getMatchLabels())));
            all(StatefulSet.class).forEach(s -> workloads.add(new Workload(this, s, s.getSpec().getTemplate(),
                    s.getSpec().getSelector().getMatchLabels())));
            return workloads;
        }

        Workload workload(String component) {
            List<Workload> matching = workloads().stream().filter(w -> w.component().equals(component)).toList();
            assertThat(matching).as("%s: workloads with app.kubernetes.io/component=%s", this, component).hasSize(1);
            return matching.get(0);
        }

        Service service(String name) {
            return all(Service.class).stream().filter(s -> s.getMetadata().getName().equals(name)).findFirst()
                    .orElseThrow(() -> new AssertionError(this + ": no Service " + name));
        }

        ConfigMap configMap(String name) {
            return all(ConfigMap.class).stream().filter(c -> c.getMetadata().getName().equals(name)).findFirst()
                    .orElseThrow(() -> new AssertionError(this + ": no ConfigMap " + name));
        }

        /** The one workload whose pods the Service selects. */
        Workload selectedBy(Service s) {
            Map<String, String> selector = s.getSpec().getSelector();
            assertThat(selector).as("%s: Service %s selector", this, s.getMetadata().getName()).isNotEmpty();
            List<Workload> selected = workloads().stream()
                    .filter(w -> w.template().getMetadata().getLabels().entrySet().containsAll(selector.entrySet())).toList();
            assertThat(selected).as("%s: workloads whose pods Service %s selects with %s", this, s.getMetadata().getName(), selector)
                    .hasSize(1);
            return selected.get(0);
        }

        @Override
        public String toString() {
            return K8S.relativize(dir).toString();
        }
    }

    /** A Deployment or StatefulSet running one moe-a2a container, seen from its first pod. */
    record Workload(Build build, HasMetadata resource, PodTemplateSpec template, Map<String, String> selector) {
        String component() {
            return template.getMetadata().getLabels().getOrDefault("app.kubernetes.io/component", "");
        }

        Container container() {
            List<Container> containers = template.getSpec().getContainers();
            assertThat(containers).as("%s: containers", this).hasSize(1);
            return containers.get(0);
        }

        int replicas() {
            Integer replicas = resource instanceof StatefulSet s ? s.getSpec().getReplicas() : ((Deployment) resource).getSpec().getReplicas();
            return replicas == null ? 1 : replicas;
        }

        String podName() {
            return resource.getMetadata().getName() + (resource instanceof StatefulSet ? "-0" : "-5d8f7c9b6-k2x7q");
        }

        int port(String name) {
            return container().getPorts().stream().filter(p -> name.equals(p.getName())).map(ContainerPort::getContainerPort)
                    .findFirst().orElseThrow(() -> new AssertionError(this + ": no container port named " + name));
        }

        /** A port number or name as the container's port number, or null when it has no such port. */
        Integer resolve(IntOrString port) {
            for (ContainerPort p : container().getPorts()) {
                if (port.getIntVal() != null ? port.getIntVal().equals(p.getContainerPort()) : port.getStrVal().equals(p.getName())) {
                    return p.getContainerPort();
                }
            }
            return null;
        }

        List<Probe> probes() {
            return Stream.of(container().getStartupProbe(), container().getReadinessProbe(), container().getLivenessProbe())
                    .filter(p -> p != null).toList();
        }

        Integer probePort(Probe probe) {
            if (probe.getGrpc() != null) {
                return resolve(new IntOrString(probe.getGrpc().getPort()));
            }
            IntOrString port = probe.getHttpGet() != null ? probe.getHttpGet().getPort()
                    : probe.getTcpSocket() != null ? probe.getTcpSocket().getPort() : null;
            assertThat(port).as("%s: probe is grpc, httpGet or tcpSocket", this).isNotNull();
            return resolve(port);
        }

        /** The container's environment in its first pod, as the kubelet builds it: envFrom, then env. */
        Map<String, String> environment() {
            Map<String, String> env = new LinkedHashMap<>();
            sources().keySet().forEach(name -> env.put(name, value(name)));
            return env;
        }

        /** Where each variable comes from: "ConfigMap name/key", "fieldRef path" or "value". */
        Map<String, String> sources() {
            Map<String, String> sources = new LinkedHashMap<>();
            for (EnvFromSource from : container().getEnvFrom()) {
                assertThat(from.getConfigMapRef()).as("%s: envFrom reads a ConfigMap", this).isNotNull();
                String name = from.getConfigMapRef().getName();
                String prefix = from.getPrefix() == null ? "" : from.getPrefix();
                build.configMap(name).getData().keySet().forEach(key -> sources.put(prefix + key, "ConfigMap " + name + "/" + key));
            }
            for (EnvVar var : container().getEnv()) {
                if (var.getValueFrom() == null) {
                    sources.put(var.getName(), "value");
                } else if (var.getValueFrom().getConfigMapKeyRef() != null) {
                    sources.put(var.getName(), "ConfigMap " + var.getValueFrom().getConfigMapKeyRef().getName() + "/"
                            + var.getValueFrom().getConfigMapKeyRef().getKey());
                } else {
                    assertThat(var.getValueFrom().getFieldRef()).as("%s: env %s is a value, ConfigMap key or fieldRef", this, var.getName())
                            .isNotNull();
                    sources.put(var.getName(), "fieldRef " + var.getValueFrom().getFieldRef().getFieldPath());
                }
            }
            return sources;
        }

        private String value(String name) {
            String source = sources().get(name);
            if (source.equals("value")) {
                return container().getEnv().stream().filter(v -> v.getName().equals(name)).map(EnvVar::getValue)
                        .map(v -> v == null ? "" : v).reduce((a, b) -> b).orElse("");
            }
            if (source.startsWith("ConfigMap ")) {
                String ref = source.substring("ConfigMap ".length());
                String value = build.configMap(ref.substring(0, ref.indexOf('/'))).getData().get(ref.substring(ref.indexOf('/') + 1));
                assertThat(value).as("%s: env %s from %s", this, name, source).isNotNull();
                return value;
            }
            String field = source.substring("fieldRef ".length());
            return switch (field) {
                case "metadata.name" -> podName();
                case "metadata.namespace" -> "default";
                case "status.podIP" -> "10.0.0.7";
                case POD_INDEX_FIELD -> {
                    assertThat(resource).as("%s: the pod-index label exists only on StatefulSet pods", this).isInstanceOf(StatefulSet.class);
                    yield "0";
                }
                default -> fail("%s: env %s reads field %s, which this test does not model", this, name, field);
            };
        }

        /** The variable an arg {@code --flag=...} takes its value from, as its source (see {@link #sources}). */
        String sourceOf(String flag) {
            String arg = container().getArgs().stream().filter(a -> a.startsWith(flag + "=")).findFirst()
                    .orElseThrow(() -> new AssertionError(this + ": no arg " + flag + "=..."));
            Matcher m = VAR_REF.matcher(arg);
            return m.find() && m.group().length() == arg.length() - flag.length() - 1 ? sources().get(m.group(1)) : "literal " + arg;
        }

        /** The args with every $(VAR) expanded, checked flag by flag against the picocli model, then parsed. */
        ParseResult parse() {
            Map<String, String> env = environment();
            List<String> args = new ArrayList<>();
            for (String arg : container().getArgs()) {
                Matcher m = VAR_REF.matcher(arg);
                args.add(m.replaceAll(r -> {
                    String value = env.get(r.group(1));
                    assertThat(value).as("%s: arg %s uses $(%s), which the container's env does not define", this, arg, r.group(1))
                            .isNotNull();
                    return Matcher.quoteReplacement(value);
                }));
            }
            assertThat(args).as("%s: args", this).isNotEmpty();
            CommandLine cli = cli();
            CommandLine sub = cli.getSubcommands().get(args.get(0));
            assertThat(sub).as("%s: first arg is a subcommand of moe-a2a %s", this, cli.getSubcommands().keySet()).isNotNull();
            Set<String> flags = sub.getCommandSpec().optionsMap().keySet();
            for (String arg : args.subList(1, args.size())) {
                assertThat(arg).as("%s: args are written --flag=value", this).startsWith("--");
                String flag = arg.contains("=") ? arg.substring(0, arg.indexOf('=')) : arg;
                assertThat(flags).as("%s: flags of moe-a2a %s", this, args.get(0)).contains(flag);
            }
            try {
                return cli.parseArgs(args.toArray(String[]::new)).subcommand();
            } catch (CommandLine.ParameterException e) {
                throw new AssertionError(this + ": moe-a2a rejects " + args + ": " + e.getMessage(), e);
            }
        }

        @Override
        public String toString() {
            return build + ": " + resource.getKind() + " " + resource.getMetadata().getName();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Workload w && w.resource == resource;
        }

        @Override
        public int hashCode() {
            return System.identityHashCode(resource);
        }
    }

    /** The subset of strategic merge patching the overlays use: workloads' pod templates, replicas, ConfigMap data. */
    static final class Patches {
        private Patches() {}

        static HasMetadata find(String where, List<HasMetadata> resources, String kind, String name) {
            List<HasMetadata> found = resources.stream().filter(r -> kind == null || r.getKind().equals(kind))
                    .filter(r -> r.getMetadata().getName().equals(name)).toList();
            assertThat(found).as("%s: resources %s %s to patch", where, kind == null ? "named" : kind, name).hasSize(1);
            return found.get(0);
        }

        static void apply(String where, List<HasMetadata> resources, HasMetadata patch) {
            HasMetadata target = find(where, resources, patch.getKind(), patch.getMetadata().getName());
            if (target instanceof StatefulSet t && patch instanceof StatefulSet p && p.getSpec() != null) {
                if (p.getSpec().getReplicas() != null) {
                    t.getSpec().setReplicas(p.getSpec().getReplicas());
                }
                mergeTemplate(where, t.getSpec().getTemplate(), p.getSpec().getTemplate());
            } else if (target instanceof Deployment t && patch instanceof Deployment p && p.getSpec() != null) {
                if (p.getSpec().getReplicas() != null) {
                    t.getSpec().setReplicas(p.getSpec().getReplicas());
                }
                mergeTemplate(where, t.getSpec().getTemplate(), p.getSpec().getTemplate());
            } else if (target instanceof ConfigMap t && patch instanceof ConfigMap p) {
                t.getData().putAll(p.getData());
            } else {
                fail("%s: this test cannot apply a %s patch yet; extend DeployManifestsTest.Patches", where, patch.getKind());
            }
        }

        static void setReplicas(HasMetadata r, int count) {
            if (r instanceof StatefulSet s) {
                s.getSpec().setReplicas(count);
            } else if (r instanceof Deployment d) {
                d.getSpec().setReplicas(count);
            } else {
                fail("replicas: %s %s is not a workload", r.getKind(), r.getMetadata().getName());
            }
        }

        private static void mergeTemplate(String where, PodTemplateSpec base, PodTemplateSpec patch) {
            if (patch == null) {
                return;
            }
            if (patch.getMetadata() != null) {
                base.getMetadata().getLabels().putAll(patch.getMetadata().getLabels());
                base.getMetadata().getAnnotations().putAll(patch.getMetadata().getAnnotations());
            }
            PodSpec p = patch.getSpec();
            if (p == null) {
                return;
            }
            PodSpec b = base.getSpec();
            if (!p.getTolerations().isEmpty()) {
                b.setTolerations(p.getTolerations());
            }
            if (!p.getNodeSelector().isEmpty()) {
                b.getNodeSelector().putAll(p.getNodeSelector());
            }
            for (Container pc : p.getContainers()) {
                Container bc = b.getContainers().stream().filter(c -> c.getName().equals(pc.getName())).findFirst()
                        .orElseThrow(() -> new AssertionError(where + ": patch adds container " + pc.getName()
                                + " (names of the base: " + b.getContainers().stream().map(Container::getName)
                                .collect(Collectors.joining(", ")) + ")"));
                if (pc.getImage() != null) {
                    bc.setImage(pc.getImage());
                }
                if (!pc.getArgs().isEmpty()) {
                    bc.setArgs(pc.getArgs());
                }
                if (!pc.getCommand().isEmpty()) {
                    bc.setCommand(pc.getCommand());
                }
                for (EnvVar e : pc.getEnv()) {
                    bc.getEnv().removeIf(x -> x.getName().equals(e.getName()));
                    bc.getEnv().add(e);
                }
                if (pc.getResources() != null) {
                    bc.getResources().getLimits().putAll(pc.getResources().getLimits());
                    bc.getResources().getRequests().putAll(pc.getResources().getRequests());
                }
                if (pc.getLivenessProbe() != null) {
                    bc.setLivenessProbe(pc.getLivenessProbe());
                }
                if (pc.getReadinessProbe() != null) {
                    bc.setReadinessProbe(pc.getReadinessProbe());
                }
            }
        }
    }
}
