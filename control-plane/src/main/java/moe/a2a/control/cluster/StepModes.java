package moe.a2a.control.cluster;

import java.util.Arrays;
import java.util.Locale;
import moe.a2a.protocol.InvalidRequestException;

/**
 * Which exchange each step runs ({@code --mode}, {@code --ll-max-tokens}): {@code normal} always
 * the all-to-all-v sized for the step; {@code low-latency} always fixed regions for {@code
 * maxTokens} tokens a rank, refusing a step that would put more on a rank; {@code auto} low latency
 * when every rank's share fits, else normal. A low-latency step's regions are sized for the
 * smallest power of two at least its largest share, up to {@code maxTokens}: a few fixed sizes,
 * none much larger than the step. A group across hosts always runs normal steps: its path has no
 * low-latency mode. Immutable.
 *
 * @param maxTokens the bound of a low-latency step, tokens a rank
 */
public record StepModes(Choice choice, int maxTokens) {
    /** Normal steps only. */
    public static final StepModes NORMAL = new StepModes(Choice.NORMAL, 128);

    /** The {@code --mode} flag's choices. */
    public enum Choice {
        AUTO,
        NORMAL,
        LOW_LATENCY;

        /** The flag's spelling: {@code auto}, {@code normal}, {@code low-latency}. */
        public String label() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }

        /** Parses {@link #label()} (any case); the error names {@code field} and the choices. */
        public static Choice parse(String field, String value) {
            for (Choice c : values()) {
                if (c.label().equalsIgnoreCase(value)) {
                    return c;
                }
            }
            throw new IllegalArgumentException(
                    field
                            + ": "
                            + value
                            + " (expected: one of "
                            + String.join(", ", Arrays.stream(values()).map(Choice::label).toList())
                            + ")");
        }
    }

    /**
     * @throws IllegalArgumentException naming {@code --ll-max-tokens} when it is not positive
     */
    public StepModes {
        if (maxTokens < 1) {
            throw new IllegalArgumentException(
                    "--ll-max-tokens: " + maxTokens + " (expected: >= 1 token a rank)");
        }
    }

    /**
     * The step's low-latency bound for ranks bringing {@code counts} tokens each, or 0 for a normal
     * step; {@code acrossHosts} when the group exchanges hierarchically.
     *
     * @throws InvalidRequestException in low-latency mode, when a rank's share is over the bound or
     *     the group spans hosts
     */
    int lowLatencyTokens(int[] counts, boolean acrossHosts) {
        if (choice == Choice.NORMAL) {
            return 0;
        }
        int most = Arrays.stream(counts).max().orElse(0);
        boolean fits = most <= maxTokens && !acrossHosts;
        if (choice == Choice.AUTO) {
            return fits ? regionTokens(most) : 0;
        }
        if (!fits) {
            throw new InvalidRequestException(
                    acrossHosts
                            ? "--mode low-latency: this group spans hosts, whose path exchanges in"
                                    + " normal mode only (expected: --mode auto or normal)"
                            : "hidden_states: a step of "
                                    + Arrays.stream(counts).sum()
                                    + " tokens puts "
                                    + most
                                    + " on a rank (expected: at most --ll-max-tokens "
                                    + maxTokens
                                    + " in --mode low-latency; send fewer tokens a request, or"
                                    + " run --mode auto)");
        }
        return regionTokens(most);
    }

    /** The smallest power of two at least {@code most} (and at least 1), at most the bound. */
    private int regionTokens(int most) {
        int need = Math.max(1, most);
        int power = Integer.highestOneBit(need);
        return Math.min(maxTokens, power == need ? power : power << 1);
    }
}
