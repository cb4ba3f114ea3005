package moe.a2a.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;
import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import org.jspecify.annotations.Nullable;

/**
 * One collective benchmark case: the collective, the group size, nccl-tests' "size" in bytes (see
 * {@link Collective}), the element type, the reduction (reducing collectives), the algorithm
 * (all-reduce and broadcast) and the broadcast root.
 *
 * <p>The size is cut to whole elements, and for the blocked collectives to a multiple of {@code N}
 * elements (at least {@code N}), as the peer harnesses do: {@link #bytes()} is what actually moves.
 */
public record CollectiveCase(
        Collective collective,
        int ranks,
        long sizeBytes,
        DType dtype,
        ReduceOp op,
        CollectiveAlgo algo,
        int root) {

    /** The largest size: buffers are Java byte buffers, and each rank holds two of this size. */
    public static final long MAX_BYTES = 1L << 30;

    /** The most ranks: sum checks stay exact in bf16 up to a sum of 256 ({@code 4N}). */
    public static final int MAX_RANKS = 64;

    public CollectiveCase {
        if (ranks < 2 || ranks > MAX_RANKS) {
            throw new IllegalArgumentException(
                    "ranks: " + ranks + " (expected: 2 to " + MAX_RANKS + ")");
        }
        if (sizeBytes < 1 || sizeBytes > MAX_BYTES) {
            throw new IllegalArgumentException(
                    "bytes: " + sizeBytes + " (expected: 1 to " + MAX_BYTES + ")");
        }
        if (root < 0 || root >= ranks) {
            throw new IllegalArgumentException(
                    "root: " + root + " (expected: in [0, " + ranks + "))");
        }
    }

    /** Elements in the size (nccl-tests' "count"). */
    public int count() {
        long count = sizeBytes / dtype.sizeBytes();
        if (collective.blocked()) {
            count -= count % ranks;
            return (int) Math.max(ranks, count);
        }
        return (int) Math.max(1, count);
    }

    /** Elements per rank's block: {@code count / N} for the blocked collectives. */
    public int blockCount() {
        return collective.blocked() ? count() / ranks : count();
    }

    /** The size as it runs: {@link #count()} whole elements. */
    public long bytes() {
        return (long) count() * dtype.sizeBytes();
    }

    /** The reduction's label, or {@code none} for a collective that does not reduce. */
    public String redop() {
        return collective.reducing() ? op.name().toLowerCase(Locale.ROOT) : "none";
    }

    /** The broadcast root, or -1 (nccl-tests prints -1 for collectives without one). */
    public int rootColumn() {
        return collective == Collective.BROADCAST ? root : -1;
    }

    /**
     * The algorithm the CPU transports run: all-reduce and broadcast as {@link #algo()} resolves
     * for them ({@code ring} or {@code tree}), all-gather and reduce-scatter {@code ring},
     * all-to-all {@code direct} (every pair at once).
     */
    public String algoLabel() {
        return switch (collective) {
            case ALLREDUCE -> algo.resolve(bytes(), ranks).name().toLowerCase(Locale.ROOT);
            case BROADCAST -> algo.resolveBroadcast().name().toLowerCase(Locale.ROOT);
            case ALLGATHER, REDUCESCATTER -> "ring";
            case ALLTOALL -> "direct";
        };
    }

    /** This case at another size. */
    public CollectiveCase withSize(long bytes) {
        return new CollectiveCase(collective, ranks, bytes, dtype, op, algo, root);
    }

    /** This case on another group size. */
    public CollectiveCase withRanks(int n) {
        return new CollectiveCase(collective, n, sizeBytes, dtype, op, algo, root);
    }

    /**
     * The constant of {@code values} named {@code text} (case-insensitive); empty text takes {@code
     * empty}. The error names {@code field} and the choices, in lower case.
     */
    public static <E extends Enum<E>> E choice(
            String field, String text, E[] values, @Nullable E empty) {
        if (text.isBlank() && empty != null) {
            return empty;
        }
        for (E e : values) {
            if (e.name().equalsIgnoreCase(text.trim())) {
                return e;
            }
        }
        throw new IllegalArgumentException(
                field
                        + ": "
                        + text
                        + " (expected: one of "
                        + Arrays.stream(values)
                                .map(CollectiveCase::label)
                                .collect(Collectors.joining(", "))
                        + ")");
    }

    /** An enum constant's name as the flags and the protocol write it: lower case. */
    public static String label(Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT);
    }

    /**
     * nccl-tests' size sweep with {@code -f 2}: {@code min}, doubling while not above {@code max}.
     */
    public static List<Long> sweep(long min, long max) {
        if (min < 1 || max < min) {
            throw new IllegalArgumentException(
                    "sizes: " + min + " to " + max + " (expected: 1 <= min <= max)");
        }
        List<Long> out = new ArrayList<>();
        for (long s = min; ; s *= 2) {
            out.add(s);
            if (s > max / 2) {
                return out;
            }
        }
    }
}
