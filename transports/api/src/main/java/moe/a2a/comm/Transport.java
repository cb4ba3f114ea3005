package moe.a2a.comm;

import java.util.Collection;
import java.util.stream.Collectors;

/**
 * A transport's name: how the CLI, the cluster protocol, the bench reports and the metrics' {@code
 * transport} tag call it. What the transport is and does is its {@link TransportProvider}'s to say
 * ({@link Transports}).
 *
 * @param label lower-case letters, digits and dashes
 */
public record Transport(String label) {
    public Transport {
        if (!label.matches("[a-z][a-z0-9-]*")) {
            throw new IllegalArgumentException(
                    "transport.label: "
                            + label
                            + " (expected: lower-case letters, digits, dashes)");
        }
    }

    /** The labels of {@code transports}, comma-separated, for messages and help texts. */
    public static String labels(Collection<Transport> transports) {
        return transports.stream().map(Transport::label).collect(Collectors.joining(", "));
    }

    @Override
    public String toString() {
        return label;
    }
}
