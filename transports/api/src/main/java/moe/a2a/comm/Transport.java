package moe.a2a.comm;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * How a group's ranks exchange rows. Its {@link #label} is how the CLI, the cluster protocol, the
 * bench reports and the metrics' {@code transport} tag name it.
 */
public enum Transport {
    /** Ranks are threads of one process; rows move through shared memory. */
    LOCAL("local"),
    /** Ranks are processes, one TCP connection per pair of ranks (Netty). */
    TCP("tcp"),
    /** Ranks are GPUs, over NCCL. */
    NCCL("nccl"),
    /**
     * Ranks are processes of one host; rows move through shared-memory files that every rank maps
     * ({@code moe.a2a.comm.shm}).
     */
    SHM("shm");

    private final String label;

    Transport(String label) {
        this.label = label;
    }

    public String label() {
        return label;
    }

    /**
     * The transport labelled {@code text} (case does not matter).
     *
     * @throws IllegalArgumentException naming {@code field} and the labels it may take
     */
    public static Transport parse(String field, String text) {
        for (Transport t : values()) {
            if (t.label.equalsIgnoreCase(text)) {
                return t;
            }
        }
        throw new IllegalArgumentException(
                field + ": " + text + " (expected: one of " + labels(values()) + ")");
    }

    /** The labels of {@code transports}, comma-separated, for messages and help texts. */
    public static String labels(Transport... transports) {
        return Arrays.stream(transports).map(Transport::label).collect(Collectors.joining(", "));
    }

    @Override
    public String toString() {
        return label;
    }
}
