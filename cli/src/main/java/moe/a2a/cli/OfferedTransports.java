package moe.a2a.cli;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import moe.a2a.comm.DataPlane;
import moe.a2a.comm.PlaneSettings;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportProbe;
import moe.a2a.comm.TransportProvider;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a worker offers the control plane: every transport between processes on the class path that
 * its provider's probe finds usable here (or the one {@code --transport} names, which must be),
 * network first, as the fallback every cluster can take.
 */
final class OfferedTransports {
    private static final Logger LOG = LoggerFactory.getLogger(OfferedTransports.class);

    private final List<TransportProvider> offered;
    private final @Nullable TransportProvider device;
    private final String deviceProbe;
    private final String missing;
    private final @Nullable String refusal;

    private OfferedTransports(
            List<TransportProvider> offered,
            @Nullable TransportProvider device,
            String deviceProbe,
            String missing,
            @Nullable String refusal) {
        this.offered = offered;
        this.device = device;
        this.deviceProbe = deviceProbe;
        this.missing = missing;
        this.refusal = refusal;
    }

    /** The transports a worker may offer, in the order it offers them. */
    static List<TransportProvider> offerable() {
        return Transports.betweenProcesses().stream()
                .sorted(
                        Comparator.comparingInt((TransportProvider p) -> offerRank(p.reach()))
                                .thenComparingInt(TransportProvider::order))
                .toList();
    }

    private static int offerRank(TransportReach reach) {
        return switch (reach) {
            case NETWORK -> 0;
            case HOST -> 1;
            case DEVICES -> 2;
            case THREADS -> 3;
        };
    }

    /** What {@code --transport} takes on a worker: "auto, tcp, shm or nccl". */
    static String choices(List<TransportProvider> offerable) {
        List<String> labels = new ArrayList<>();
        labels.add(WorkerCommand.AUTO);
        offerable.forEach(p -> labels.add(p.transport().label()));
        return String.join(", ", labels.subList(0, labels.size() - 1))
                + " or "
                + labels.get(labels.size() - 1);
    }

    /**
     * Probes {@code chosen}, or under auto (null) every offerable transport, and logs what it
     * found.
     */
    static OfferedTransports probe(
            @Nullable TransportProvider chosen,
            List<TransportProvider> offerable,
            PlaneSettings settings) {
        OfferedTransports offer = survey(chosen, offerable, settings);
        if (offer.device != null) {
            LOG.info("{} probe: {}", offer.device.transport(), offer.deviceProbe);
        }
        if (chosen == null) {
            LOG.info(
                    "--transport auto: offering {} to the control plane{}{}",
                    offer.transports(),
                    offer.offered.stream().anyMatch(p -> p.reach() == TransportReach.DEVICES)
                            ? ""
                            : " (no GPU data plane here, see the probe above)",
                    offer.missing);
        }
        return offer;
    }

    /** As {@link #probe}, without a word in the log. */
    static OfferedTransports survey(
            @Nullable TransportProvider chosen,
            List<TransportProvider> offerable,
            PlaneSettings settings) {
        List<TransportProvider> offered = new ArrayList<>();
        StringBuilder missing = new StringBuilder();
        TransportProvider device = null;
        String deviceProbe = "";
        for (TransportProvider p : chosen == null ? offerable : List.of(chosen)) {
            TransportProbe probe = p.probe(settings);
            if (p.reach() == TransportReach.DEVICES) {
                device = p;
                deviceProbe = probe.description();
            }
            if (probe.usable()) {
                offered.add(p);
            } else if (chosen != null) {
                return new OfferedTransports(
                        List.of(),
                        device,
                        deviceProbe,
                        "",
                        "--transport " + p.transport() + ": " + probe.description());
            } else if (p.reach() != TransportReach.DEVICES) {
                missing.append(" (no ")
                        .append(p.transport())
                        .append(": ")
                        .append(probe.description())
                        .append(')');
            }
        }
        return new OfferedTransports(offered, device, deviceProbe, missing.toString(), null);
    }

    /** Why each transport between processes that cannot run here cannot: " (no shm: ...)". */
    String missing() {
        return missing;
    }

    /** Why the worker cannot start with the transport it was told to run, or null. */
    @Nullable String refusal() {
        return refusal;
    }

    /** What the device transport's probe found (empty when none was probed), for Join. */
    String deviceProbe() {
        return deviceProbe;
    }

    List<Transport> transports() {
        return Transports.transports(offered);
    }

    /** Opens every offered transport's data plane. */
    Planes open(PlaneSettings settings) {
        List<DataPlane> planes = new ArrayList<>();
        try {
            for (TransportProvider p : offered) {
                planes.add(p.dataPlane(settings));
            }
        } catch (RuntimeException e) {
            new Planes(planes).close();
            throw e;
        }
        return new Planes(planes);
    }

    /** The worker's data planes, closed when it leaves. */
    record Planes(List<DataPlane> all) implements AutoCloseable {
        /** What each plane runs on, for the start-up line: " (tcp: ...) (shm: ..., domain ...)". */
        String descriptions() {
            StringBuilder out = new StringBuilder();
            for (DataPlane plane : all) {
                if (plane.description().isEmpty()) {
                    continue;
                }
                out.append(" (").append(plane.transport()).append(": ").append(plane.description());
                if (!plane.domain().isEmpty()) {
                    out.append(", domain ").append(plane.domain());
                }
                out.append(')');
            }
            return out.toString();
        }

        @Override
        public void close() {
            for (DataPlane plane : all) {
                plane.close();
            }
        }
    }
}
