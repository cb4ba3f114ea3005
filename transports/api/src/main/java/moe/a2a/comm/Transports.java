package moe.a2a.comm;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.ServiceLoader;

/**
 * The transports on this process's class path: every {@link TransportProvider} that {@link
 * ServiceLoader} finds, loaded once, in {@link TransportProvider#order} order.
 */
public final class Transports {
    private static final List<TransportProvider> ALL = load();

    private Transports() {}

    private static List<TransportProvider> load() {
        List<TransportProvider> out = new ArrayList<>();
        ServiceLoader.load(TransportProvider.class, Transports.class.getClassLoader())
                .forEach(out::add);
        out.sort(Comparator.comparingInt(TransportProvider::order));
        for (int i = 1; i < out.size(); i++) {
            if (out.get(i).transport().equals(out.get(i - 1).transport())) {
                throw new IllegalStateException(
                        "transport "
                                + out.get(i).transport()
                                + ": two providers on the class path");
            }
        }
        return List.copyOf(out);
    }

    /** Every provider, in order. */
    public static List<TransportProvider> all() {
        return ALL;
    }

    /** The providers whose ranks can be processes (every reach but threads), in order. */
    public static List<TransportProvider> betweenProcesses() {
        return ALL.stream().filter(p -> p.reach() != TransportReach.THREADS).toList();
    }

    /** The transports of {@code providers}, in their order. */
    public static List<Transport> transports(List<TransportProvider> providers) {
        return providers.stream().map(TransportProvider::transport).toList();
    }

    /**
     * The provider of {@code transport}.
     *
     * @throws IllegalArgumentException when no provider on the class path has it
     */
    public static TransportProvider provider(Transport transport) {
        for (TransportProvider p : ALL) {
            if (p.transport().equals(transport)) {
                return p;
            }
        }
        throw new IllegalArgumentException(
                "transport: " + transport + " (expected: one of " + labels(ALL) + ")");
    }

    /** Where {@code transport}'s ranks may be. */
    public static TransportReach reach(Transport transport) {
        return provider(transport).reach();
    }

    /** The first provider of {@code reach}, if the class path has one. */
    public static Optional<TransportProvider> first(TransportReach reach) {
        return ALL.stream().filter(p -> p.reach() == reach).findFirst();
    }

    /**
     * The first provider of {@code reach}.
     *
     * @throws IllegalStateException naming the reach when the class path has none
     */
    public static TransportProvider require(TransportReach reach) {
        return first(reach)
                .orElseThrow(
                        () ->
                                new IllegalStateException(
                                        "no transport of reach "
                                                + reach
                                                + " on the class path (expected one of: "
                                                + labels(ALL)
                                                + ")"));
    }

    /**
     * The transport labelled {@code text} (case does not matter) among {@code among}.
     *
     * @throws IllegalArgumentException naming {@code field} and the labels it may take
     */
    public static Transport parse(String field, String text, List<TransportProvider> among) {
        for (TransportProvider p : among) {
            if (p.transport().label().equalsIgnoreCase(text)) {
                return p.transport();
            }
        }
        throw new IllegalArgumentException(
                field + ": " + text + " (expected: one of " + labels(among) + ")");
    }

    /**
     * The transport labelled {@code text} among every provider; see {@link #parse(String, String,
     * List)}.
     */
    public static Transport parse(String field, String text) {
        return parse(field, text, ALL);
    }

    /** The labels of {@code providers}, comma-separated. */
    public static String labels(List<TransportProvider> providers) {
        return Transport.labels(transports(providers));
    }
}
