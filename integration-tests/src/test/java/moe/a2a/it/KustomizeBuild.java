package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import tools.jackson.databind.JsonNode;

/**
 * One kustomization rendered by the real kustomize ({@code kustomize build}, or {@code kubectl
 * kustomize}, whichever is on the PATH), its objects typed by fabric8, with lookups of what the
 * checks need. Without either tool the checks are skipped, unless {@code
 * MOE_A2A_IT_REQUIRE_KUSTOMIZE=1} (as {@code .ci/run} sets) makes that a failure.
 *
 * @param name the kustomization's folder relative to deploy/k8s, for messages
 */
record KustomizeBuild(String name, Path dir, List<HasMetadata> resources) {

    /** Every kustomization.yaml under {@code root}, in path order. */
    static List<Path> kustomizations(Path root) throws IOException {
        assertThat(root).as("deploy/k8s (system property moe.a2a.it.deploy)").isDirectory();
        try (Stream<Path> files = Files.walk(root)) {
            return files.filter(p -> p.getFileName().toString().equals("kustomization.yaml"))
                    .sorted()
                    .toList();
        }
    }

    static JsonNode read(Path kustomization) {
        return Manifests.tree(kustomization);
    }

    /** The kustomization in {@code dir}, rendered. */
    static KustomizeBuild of(Path root, Path dir) {
        List<String> command = new ArrayList<>(tool());
        command.add(dir.toString());
        String yaml;
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(false).start();
            yaml = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.waitFor()).as("%s: %s\n%s", String.join(" ", command), dir, err).isZero();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
        return new KustomizeBuild(root.relativize(dir).toString(), dir, Manifests.resources(yaml));
    }

    /**
     * {@code kustomize build} or {@code kubectl kustomize}; skips the test when neither is here.
     */
    private static List<String> tool() {
        for (List<String> candidate :
                List.of(List.of("kustomize", "build"), List.of("kubectl", "kustomize"))) {
            if (onPath(candidate.get(0))) {
                return candidate;
            }
        }
        if ("1".equals(System.getenv("MOE_A2A_IT_REQUIRE_KUSTOMIZE"))) {
            throw new AssertionError("neither kustomize nor kubectl is on the PATH (see .ci/run)");
        }
        assumeTrue(false, "neither kustomize nor kubectl is on the PATH");
        throw new AssertionError("unreachable");
    }

    private static boolean onPath(String command) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            if (Files.isExecutable(Path.of(dir, command))) {
                return true;
            }
        }
        return false;
    }

    /**
     * The manifest files of the kustomization in {@code dir} itself, not of the bases it includes.
     */
    static List<Path> files(Path dir) {
        JsonNode k = read(dir.resolve("kustomization.yaml"));
        return Stream.concat(
                        k.path("resources").values().stream(),
                        k.path("patches").values().stream().map(p -> p.path("path")))
                .map(n -> dir.resolve(n.asString()).normalize())
                .filter(Files::isRegularFile)
                .toList();
    }

    <T extends HasMetadata> List<T> all(Class<T> kind) {
        return resources.stream().filter(kind::isInstance).map(kind::cast).toList();
    }

    List<Workload> workloads() {
        List<Workload> workloads = new ArrayList<>();
        all(Deployment.class)
                .forEach(
                        d ->
                                workloads.add(
                                        new Workload(
                                                this,
                                                d,
                                                d.getSpec().getTemplate(),
                                                d.getSpec().getSelector().getMatchLabels())));
        all(StatefulSet.class)
                .forEach(
                        s ->
                                workloads.add(
                                        new Workload(
                                                this,
                                                s,
                                                s.getSpec().getTemplate(),
                                                s.getSpec().getSelector().getMatchLabels())));
        return workloads;
    }

    /** The one workload labelled {@code app.kubernetes.io/component=component}. */
    Workload workload(String component) {
        List<Workload> matching =
                workloads().stream().filter(w -> w.component().equals(component)).toList();
        assertThat(matching)
                .as("%s: workloads with app.kubernetes.io/component=%s", this, component)
                .hasSize(1);
        return matching.get(0);
    }

    Service service(String name) {
        return all(Service.class).stream()
                .filter(s -> s.getMetadata().getName().equals(name))
                .findFirst()
                .orElseThrow(() -> new AssertionError(this + ": no Service " + name));
    }

    ConfigMap configMap(String name) {
        return all(ConfigMap.class).stream()
                .filter(c -> c.getMetadata().getName().equals(name))
                .findFirst()
                .orElseThrow(() -> new AssertionError(this + ": no ConfigMap " + name));
    }

    /** The one workload whose pods the Service selects. */
    Workload selectedBy(Service s) {
        Map<String, String> selector = s.getSpec().getSelector();
        assertThat(selector)
                .as("%s: Service %s selector", this, s.getMetadata().getName())
                .isNotEmpty();
        List<Workload> selected =
                workloads().stream()
                        .filter(
                                w ->
                                        w.template()
                                                .getMetadata()
                                                .getLabels()
                                                .entrySet()
                                                .containsAll(selector.entrySet()))
                        .toList();
        assertThat(selected)
                .as(
                        "%s: workloads whose pods Service %s selects with %s",
                        this, s.getMetadata().getName(), selector)
                .hasSize(1);
        return selected.get(0);
    }

    @Override
    public String toString() {
        return name;
    }
}
