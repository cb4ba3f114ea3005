package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.PodTemplateSpec;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The part of kustomize's strategic merge patching the overlays use: workloads' replicas and pod
 * templates (containers merged by name, env by variable name), and ConfigMap data. Any other patch
 * fails, so that an overlay never relies on a merge this test gets wrong.
 */
final class StrategicMerge {
    private StrategicMerge() {}

    /** The one resource of {@code kind} (any kind when null) called {@code name}. */
    static HasMetadata find(String where, List<HasMetadata> resources, String kind, String name) {
        List<HasMetadata> found =
                resources.stream()
                        .filter(r -> kind == null || r.getKind().equals(kind))
                        .filter(r -> r.getMetadata().getName().equals(name))
                        .toList();
        assertThat(found)
                .as("%s: resources %s %s to patch", where, kind == null ? "named" : kind, name)
                .hasSize(1);
        return found.get(0);
    }

    static void apply(String where, List<HasMetadata> resources, HasMetadata patch) {
        HasMetadata target = find(where, resources, patch.getKind(), patch.getMetadata().getName());
        if (target instanceof StatefulSet t
                && patch instanceof StatefulSet p
                && p.getSpec() != null) {
            if (p.getSpec().getReplicas() != null) {
                t.getSpec().setReplicas(p.getSpec().getReplicas());
            }
            mergeTemplate(where, t.getSpec().getTemplate(), p.getSpec().getTemplate());
        } else if (target instanceof Deployment t
                && patch instanceof Deployment p
                && p.getSpec() != null) {
            if (p.getSpec().getReplicas() != null) {
                t.getSpec().setReplicas(p.getSpec().getReplicas());
            }
            mergeTemplate(where, t.getSpec().getTemplate(), p.getSpec().getTemplate());
        } else if (target instanceof ConfigMap t && patch instanceof ConfigMap p) {
            t.getData().putAll(p.getData());
        } else {
            fail(
                    "%s: this test cannot apply a %s patch yet; extend StrategicMerge",
                    where, patch.getKind());
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
            Container bc =
                    b.getContainers().stream()
                            .filter(c -> c.getName().equals(pc.getName()))
                            .findFirst()
                            .orElseThrow(
                                    () ->
                                            new AssertionError(
                                                    where
                                                            + ": patch adds container "
                                                            + pc.getName()
                                                            + " (names of the base: "
                                                            + b.getContainers().stream()
                                                                    .map(Container::getName)
                                                                    .collect(
                                                                            Collectors.joining(
                                                                                    ", "))
                                                            + ")"));
            mergeContainer(bc, pc);
        }
    }

    private static void mergeContainer(Container base, Container patch) {
        if (patch.getImage() != null) {
            base.setImage(patch.getImage());
        }
        if (!patch.getArgs().isEmpty()) {
            base.setArgs(patch.getArgs());
        }
        if (!patch.getCommand().isEmpty()) {
            base.setCommand(patch.getCommand());
        }
        for (EnvVar e : patch.getEnv()) {
            base.getEnv().removeIf(x -> x.getName().equals(e.getName()));
            base.getEnv().add(e);
        }
        if (patch.getResources() != null) {
            base.getResources().getLimits().putAll(patch.getResources().getLimits());
            base.getResources().getRequests().putAll(patch.getResources().getRequests());
        }
        if (patch.getLivenessProbe() != null) {
            base.setLivenessProbe(patch.getLivenessProbe());
        }
        if (patch.getReadinessProbe() != null) {
            base.setReadinessProbe(patch.getReadinessProbe());
        }
    }
}
