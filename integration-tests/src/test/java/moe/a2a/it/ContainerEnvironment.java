package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvFromSource;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A workload's container environment in its first pod, built as the kubelet builds it (envFrom,
 * then env, a later entry replacing an earlier one), and the container's args with every {@code
 * $(VAR)} expanded from it. Where each variable comes from is kept too, so that a check can require
 * a flag to come from a shared ConfigMap rather than just to have the right value today.
 */
final class ContainerEnvironment {
    static final String POD_INDEX_FIELD = "metadata.labels['apps.kubernetes.io/pod-index']";
    private static final Pattern VAR_REF = Pattern.compile("\\$\\(([A-Za-z_][A-Za-z0-9_]*)\\)");

    private final Workload workload;
    private final Container container;
    private final Map<String, String> sources = new LinkedHashMap<>();

    ContainerEnvironment(Workload workload) {
        this.workload = workload;
        this.container = workload.container();
        for (EnvFromSource from : container.getEnvFrom()) {
            assertThat(from.getConfigMapRef())
                    .as("%s: envFrom reads a ConfigMap", workload)
                    .isNotNull();
            String name = from.getConfigMapRef().getName();
            String prefix = from.getPrefix() == null ? "" : from.getPrefix();
            workload.build()
                    .configMap(name)
                    .getData()
                    .keySet()
                    .forEach(key -> sources.put(prefix + key, "ConfigMap " + name + "/" + key));
        }
        for (EnvVar var : container.getEnv()) {
            if (var.getValueFrom() == null) {
                sources.put(var.getName(), "value");
            } else if (var.getValueFrom().getConfigMapKeyRef() != null) {
                sources.put(
                        var.getName(),
                        "ConfigMap "
                                + var.getValueFrom().getConfigMapKeyRef().getName()
                                + "/"
                                + var.getValueFrom().getConfigMapKeyRef().getKey());
            } else {
                assertThat(var.getValueFrom().getFieldRef())
                        .as(
                                "%s: env %s is a value, ConfigMap key or fieldRef",
                                workload, var.getName())
                        .isNotNull();
                sources.put(
                        var.getName(),
                        "fieldRef " + var.getValueFrom().getFieldRef().getFieldPath());
            }
        }
    }

    /** Where each variable comes from: "ConfigMap name/key", "fieldRef path" or "value". */
    Map<String, String> sources() {
        return sources;
    }

    Map<String, String> variables() {
        Map<String, String> env = new LinkedHashMap<>();
        sources.keySet().forEach(name -> env.put(name, value(name)));
        return env;
    }

    /**
     * The source of the variable an arg {@code --flag=$(VAR)} takes its whole value from, else
     * "literal arg".
     */
    String sourceOf(String flag) {
        String arg =
                container.getArgs().stream()
                        .filter(a -> a.startsWith(flag + "="))
                        .findFirst()
                        .orElseThrow(
                                () -> new AssertionError(workload + ": no arg " + flag + "=..."));
        Matcher m = VAR_REF.matcher(arg);
        return m.find() && m.group().length() == arg.length() - flag.length() - 1
                ? sources.get(m.group(1))
                : "literal " + arg;
    }

    /**
     * The container's args with every $(VAR) replaced; a variable the env lacks fails (kubelet
     * would pass it on verbatim).
     */
    List<String> expandedArgs() {
        Map<String, String> env = variables();
        List<String> args = new ArrayList<>();
        for (String arg : container.getArgs()) {
            args.add(
                    VAR_REF.matcher(arg)
                            .replaceAll(
                                    r -> {
                                        String value = env.get(r.group(1));
                                        assertThat(value)
                                                .as(
                                                        "%s: arg %s uses $(%s), which the container's env does not define",
                                                        workload, arg, r.group(1))
                                                .isNotNull();
                                        return Matcher.quoteReplacement(value);
                                    }));
        }
        return args;
    }

    private String value(String name) {
        String source = sources.get(name);
        if (source.equals("value")) {
            return container.getEnv().stream()
                    .filter(v -> v.getName().equals(name))
                    .map(EnvVar::getValue)
                    .map(v -> v == null ? "" : v)
                    .reduce((a, b) -> b)
                    .orElse("");
        }
        if (source.startsWith("ConfigMap ")) {
            String ref = source.substring("ConfigMap ".length());
            String value =
                    workload.build()
                            .configMap(ref.substring(0, ref.indexOf('/')))
                            .getData()
                            .get(ref.substring(ref.indexOf('/') + 1));
            assertThat(value).as("%s: env %s from %s", workload, name, source).isNotNull();
            return value;
        }
        String field = source.substring("fieldRef ".length());
        return switch (field) {
            case "metadata.name" -> workload.podName();
            case "metadata.namespace" -> "default";
            case "status.podIP" -> "10.0.0.7";
            case POD_INDEX_FIELD -> {
                assertThat(workload.resource())
                        .as("%s: the pod-index label exists only on StatefulSet pods", workload)
                        .isInstanceOf(StatefulSet.class);
                yield "0";
            }
            default ->
                    fail(
                            "%s: env %s reads field %s, which this test does not model",
                            workload, name, field);
        };
    }
}
