package moe.a2a.bench;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The collectives {@code bench --collective} times, with nccl-tests' meaning of a run's "size" and
 * its bus-bandwidth factors.
 */
public enum Collective {
    /** Size: the buffer, on every rank. Bus factor {@code 2(N-1)/N}. */
    ALLREDUCE("allreduce", true),
    /** Size: the gathered output ({@code N} × each rank's input). Bus factor {@code (N-1)/N}. */
    ALLGATHER("allgather", false),
    /** Size: each rank's input ({@code N} × its output). Bus factor {@code (N-1)/N}. */
    REDUCESCATTER("reducescatter", true),
    /** Size: the buffer. Bus factor 1. */
    BROADCAST("broadcast", false),
    /** Size: each rank's send buffer ({@code N} blocks). Bus factor {@code (N-1)/N}. */
    ALLTOALL("alltoall", false);

    private final String label;
    private final boolean reducing;

    Collective(String label, boolean reducing) {
        this.label = label;
        this.reducing = reducing;
    }

    public String label() {
        return label;
    }

    /** Whether it reduces (takes a reduction op); the others only move bytes. */
    public boolean reducing() {
        return reducing;
    }

    /**
     * nccl-tests' bus-bandwidth factor: busbw = algbw × factor, the rate each rank's link carries
     * when the algorithm is bandwidth-optimal, comparable across rank counts.
     */
    public double busFactor(int ranks) {
        return switch (this) {
            case ALLREDUCE -> 2.0 * (ranks - 1) / ranks;
            case BROADCAST -> 1.0;
            default -> (double) (ranks - 1) / ranks;
        };
    }

    /**
     * Whether the size's element count must split into {@code N} equal blocks (all-gather,
     * reduce-scatter, all-to-all).
     */
    public boolean blocked() {
        return this == ALLGATHER || this == REDUCESCATTER || this == ALLTOALL;
    }

    /** The collective labelled {@code text} (case-insensitive); the error names {@code field}. */
    public static Collective parse(String field, String text) {
        for (Collective c : values()) {
            if (c.label.equalsIgnoreCase(text.trim())) {
                return c;
            }
        }
        throw new IllegalArgumentException(
                field + ": " + text + " (expected: one of " + labels() + ")");
    }

    /** Every label, comma-separated. */
    public static String labels() {
        return Arrays.stream(values()).map(Collective::label).collect(Collectors.joining(", "));
    }

    @Override
    public String toString() {
        return label.toLowerCase(Locale.ROOT);
    }
}
