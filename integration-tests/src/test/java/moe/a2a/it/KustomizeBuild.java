package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import tools.jackson.databind.JsonNode;

/**
 * One kustomization built as kustomize would build it for the features these manifests use
 * (resources and bases, strategic merge patches, replicas, images), with lookups of what the checks
 * need. There is no kustomize binary here; a field it does not model fails on reading rather than
 * being ignored.
 *
 * @param name the kustomization's folder relative to deploy/k8s, for messages
 * @param images the images an {@code images:} entry retags, here or in a base
 */
record KustomizeBuild(String name, Path dir, List<HasMetadata> resources, Set<String> images) {
    private static final Set<String> MODELLED_FIELDS =
            Set.of("apiVersion", "kind", "resources", "patches", "images", "replicas");

    /** Every kustomization.yaml under {@code root}, in path order. */
    static List<Path> kustomizations(Path root) throws IOException {
        assertThat(root).as("deploy/k8s (system property moe.a2a.it.deploy)").isDirectory();
        try (Stream<Path> files = Files.walk(root)) {
            return files.filter(p -> p.getFileName().toString().equals("kustomization.yaml"))
                    .sorted()
                    .toList();
        }
    }

    /** A kustomization.yaml, checked to use only the fields this class models. */
    static JsonNode read(Path kustomization) {
        JsonNode k = Manifests.tree(kustomization);
        assertThat(k.propertyNames())
                .as("%s: fields KustomizeBuild models (extend it for others)", kustomization)
                .allMatch(MODELLED_FIELDS::contains);
        return k;
    }

    static KustomizeBuild of(Path root, Path dir) {
        JsonNode k = read(dir.resolve("kustomization.yaml"));
        List<HasMetadata> resources = new ArrayList<>();
        Set<String> images = new HashSet<>();
        for (JsonNode entry : k.path("resources").values()) {
            Path p = dir.resolve(entry.asString()).normalize();
            assertThat(p).as("%s: resource %s", dir, entry.asString()).exists();
            if (Files.isDirectory(p)) {
                KustomizeBuild base = of(root, p);
                base.resources().forEach(r -> resources.add(Manifests.copy(r)));
                images.addAll(base.images());
            } else {
                resources.add(Manifests.resource(p));
            }
        }
        for (JsonNode patch : k.path("patches").values()) {
            assertThat(patch.has("target"))
                    .as("%s: patches with target: (not modelled here)", dir)
                    .isFalse();
            Path p = dir.resolve(patch.path("path").asString()).normalize();
            assertThat(p).as("%s: patch %s", dir, patch.path("path").asString()).isRegularFile();
            StrategicMerge.apply(dir.toString(), resources, Manifests.resource(p));
        }
        for (JsonNode replicas : k.path("replicas").values()) {
            HasMetadata r =
                    StrategicMerge.find(
                            dir.toString(), resources, null, replicas.path("name").asString());
            StrategicMerge.setReplicas(r, replicas.path("count").asInt());
        }
        for (JsonNode image : k.path("images").values()) {
            images.add(image.path("name").asString());
        }
        return new KustomizeBuild(root.relativize(dir).toString(), dir, resources, images);
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
