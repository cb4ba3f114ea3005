package moe.a2a.dispatch;

import java.util.Arrays;
import java.util.Locale;

/**
 * How a step's rows are exchanged.
 *
 * <ul>
 *   <li>{@link #NORMAL}: an all-to-all-v sized for the step ({@link Dispatcher}): each exchange's
 *       counts travel first, then exactly the rows.
 *   <li>{@link #LOW_LATENCY}: fixed regions sized for a bound on the tokens a rank ({@link
 *       LowLatencyDispatcher}): no count exchange, every size known in advance.
 * </ul>
 */
public enum DispatchMode {
    NORMAL,
    LOW_LATENCY;

    /** The name flags and reports use: {@code normal}, {@code low-latency}. */
    public String label() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** Parses {@link #label()} (any case); the error names {@code field} and the choices. */
    public static DispatchMode parse(String field, String value) {
        for (DispatchMode m : values()) {
            if (m.label().equalsIgnoreCase(value)) {
                return m;
            }
        }
        throw new IllegalArgumentException(
                field
                        + ": "
                        + value
                        + " (expected: one of "
                        + String.join(", ", Arrays.stream(values()).map(m -> m.label()).toList())
                        + ")");
    }
}
