package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.PodTemplateSpec;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Stream;
import picocli.CommandLine.ParseResult;

/**
 * A Deployment or StatefulSet of a build, running one moe-a2a container, seen from its first pod.
 */
record Workload(
        KustomizeBuild build,
        HasMetadata resource,
        PodTemplateSpec template,
        Map<String, String> selector) {
    String component() {
        return template.getMetadata().getLabels().getOrDefault("app.kubernetes.io/component", "");
    }

    Container container() {
        List<Container> containers = template.getSpec().getContainers();
        assertThat(containers).as("%s: containers", this).hasSize(1);
        return containers.get(0);
    }

    int replicas() {
        Integer replicas =
                resource instanceof StatefulSet s
                        ? s.getSpec().getReplicas()
                        : ((Deployment) resource).getSpec().getReplicas();
        return replicas == null ? 1 : replicas;
    }

    /**
     * The first pod's name: ordinal 0 of a StatefulSet, a made-up ReplicaSet hash and suffix of a
     * Deployment.
     */
    String podName() {
        return resource.getMetadata().getName()
                + (resource instanceof StatefulSet ? "-0" : "-5d8f7c9b6-k2x7q");
    }

    int port(String name) {
        return container().getPorts().stream()
                .filter(p -> name.equals(p.getName()))
                .map(ContainerPort::getContainerPort)
                .findFirst()
                .orElseThrow(() -> new AssertionError(this + ": no container port named " + name));
    }

    /** A port number or name as the container's port number, or null when it has no such port. */
    Integer resolve(IntOrString port) {
        for (ContainerPort p : container().getPorts()) {
            if (port.getIntVal() != null
                    ? port.getIntVal().equals(p.getContainerPort())
                    : port.getStrVal().equals(p.getName())) {
                return p.getContainerPort();
            }
        }
        return null;
    }

    List<Probe> probes() {
        return Stream.of(
                        container().getStartupProbe(),
                        container().getReadinessProbe(),
                        container().getLivenessProbe())
                .filter(Objects::nonNull)
                .toList();
    }

    Integer probePort(Probe probe) {
        if (probe.getGrpc() != null) {
            return resolve(new IntOrString(probe.getGrpc().getPort()));
        }
        IntOrString port =
                probe.getHttpGet() != null
                        ? probe.getHttpGet().getPort()
                        : probe.getTcpSocket() != null ? probe.getTcpSocket().getPort() : null;
        assertThat(port).as("%s: probe is grpc, httpGet or tcpSocket", this).isNotNull();
        return resolve(port);
    }

    ContainerEnvironment environment() {
        return new ContainerEnvironment(this);
    }

    /** See {@link ContainerEnvironment#sourceOf}. */
    String sourceOf(String flag) {
        return environment().sourceOf(flag);
    }

    /** What moe-a2a makes of the args once the kubelet expanded them. */
    ParseResult parse() {
        return CliModel.parse(toString(), environment().expandedArgs());
    }

    @Override
    public String toString() {
        return build + ": " + resource.getKind() + " " + resource.getMetadata().getName();
    }

    // Identity: the records' fields are mutable fabric8 objects, and a build holds each resource
    // once.
    @Override
    public boolean equals(Object o) {
        return o instanceof Workload w && w.resource == resource;
    }

    @Override
    public int hashCode() {
        return System.identityHashCode(resource);
    }
}
