package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.dataformat.yaml.YAMLMapper;

/**
 * Reads deploy/k8s files and kustomize's output: kustomizations as YAML trees, manifests as typed
 * fabric8 resources.
 */
final class Manifests {
    private static final KubernetesSerialization SERIALIZATION = new KubernetesSerialization();
    private static final YAMLMapper YAML = new YAMLMapper();

    private Manifests() {}

    static JsonNode tree(Path file) {
        return YAML.readTree(file.toFile());
    }

    /**
     * The one resource in {@code file}, as its fabric8 type; a kind fabric8 does not know fails.
     */
    static HasMetadata resource(Path file) {
        Object parsed;
        try (InputStream in = Files.newInputStream(file)) {
            parsed = SERIALIZATION.unmarshal(in);
        } catch (IOException | RuntimeException e) {
            throw new AssertionError(file + ": not a Kubernetes resource: " + e.getMessage(), e);
        }
        assertThat(parsed)
                .as("%s: one typed resource per file", file)
                .isInstanceOf(HasMetadata.class)
                .isNotInstanceOf(GenericKubernetesResource.class);
        return (HasMetadata) parsed;
    }

    /**
     * The resources of a multi-document YAML stream (kustomize's output), each as its fabric8 type;
     * a kind fabric8 does not know fails.
     */
    static List<HasMetadata> resources(String yaml) {
        List<HasMetadata> out = new ArrayList<>();
        for (String doc : yaml.split("(?m)^---\\s*$")) {
            if (doc.isBlank()) {
                continue;
            }
            Object parsed = SERIALIZATION.unmarshal(doc);
            assertThat(parsed)
                    .as("a typed resource:%n%s", doc)
                    .isInstanceOf(HasMetadata.class)
                    .isNotInstanceOf(GenericKubernetesResource.class);
            out.add((HasMetadata) parsed);
        }
        return out;
    }

    /**
     * Paths of fields the Kubernetes API does not define: fabric8 keeps them in
     * additionalProperties.
     */
    static List<String> unknownFields(HasMetadata resource) {
        List<String> unknown = new ArrayList<>();
        findUnknownFields(resource, resource.getKind(), unknown, 0);
        return unknown;
    }

    private static void findUnknownFields(
            Object node, String path, List<String> unknown, int depth) {
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
                if (getter.getParameterCount() != 0
                        || !getter.getName().startsWith("get")
                        || getter.getDeclaringClass() == Object.class) {
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
                    findUnknownFields(
                            value, path + "." + getter.getName().substring(3), unknown, depth + 1);
                }
            }
        }
    }
}
