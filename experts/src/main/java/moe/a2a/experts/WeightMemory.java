package moe.a2a.experts;

import java.util.Arrays;

/**
 * Where a rank holds its experts' weights: bytes one local expert's three projections take on the
 * device and on the host, and the distinct experts the rank holds, summed over its layers (two
 * slots of one expert share its weights).
 */
public record WeightMemory(long deviceBytesPerExpert, long hostBytesPerExpert, long localExperts) {
    /** Before a rank has loaded its experts. */
    public static final WeightMemory NONE = new WeightMemory(0, 0, 0);

    /**
     * The distinct experts {@code runtime}'s rank holds over {@code layers} layers, as placed now.
     */
    public static long localExperts(RankRuntime runtime, int rank, int layers) {
        long experts = 0;
        for (int layer = 0; layer < layers; layer++) {
            experts += Arrays.stream(runtime.placement(layer).expertsOf(rank)).distinct().count();
        }
        return experts;
    }
}
