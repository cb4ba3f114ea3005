package moe.a2a.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The command line of a child JVM that runs moe-a2a: this JVM's {@code java} and the options every
 * moe-a2a JVM gets (the same list as {@code bin/moe-a2a} and the images' launcher): the Vector API
 * for the kernels, native access for JavaCPP (OpenBLAS, CUDA) and Netty's epoll, and a
 * direct-memory cap of three quarters of the machine or container (expert weights live off-heap,
 * and the JVM caps direct memory at the heap's maximum, a quarter by default).
 */
public final class JvmOptions {
    /** Options for every moe-a2a JVM. */
    public static final List<String> MOE_A2A =
            List.of(
                    "--add-modules=jdk.incubator.vector",
                    "--enable-native-access=ALL-UNNAMED",
                    "--sun-misc-unsafe-memory-access=allow",
                    "-XX:MaxRAMPercentage=75");

    private JvmOptions() {}

    /**
     * {@code java} of this JVM, then {@link #MOE_A2A}, then this JVM's log level and format when
     * set (a child logs as its parent), then {@code extra}.
     */
    public static List<String> childCommand(String... extra) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(MOE_A2A);
        for (String name : List.of(LogOptions.LEVEL_PROP_NAME, LogOptions.FORMAT_PROP_NAME)) {
            String value = System.getProperty(name);
            if (value != null) {
                command.add("-D" + name + "=" + value);
            }
        }
        command.addAll(List.of(extra));
        return command;
    }
}
