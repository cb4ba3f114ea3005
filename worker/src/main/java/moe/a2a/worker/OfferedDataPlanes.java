package moe.a2a.worker;

import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Set;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.DataPlane;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import moe.a2a.v1.Join;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The data planes a worker offers the control plane, and the one its rank runs on now: the control
 * plane picks it when it accepts the worker, and may switch it per group epoch. The offer is fixed
 * when built and read by the session thread for each Join; the plane in use is owned by the
 * worker's data-plane thread.
 */
final class OfferedDataPlanes {
    private static final Logger LOG = LoggerFactory.getLogger(OfferedDataPlanes.class);

    private final LinkedHashMap<Transport, DataPlane> offered = new LinkedHashMap<>();

    /** Null until the control plane accepts this worker. */
    private DataPlane current;

    OfferedDataPlanes(List<DataPlane> dataPlanes) {
        dataPlanes.stream()
                .sorted(Comparator.comparingInt(p -> Transports.provider(p.transport()).order()))
                .forEach(plane -> offered.put(plane.transport(), plane));
    }

    /** The transports offered, in their providers' order. */
    Set<Transport> transports() {
        return offered.keySet();
    }

    /**
     * Adds to {@code join} the memory domain (and its directory) of the plane whose ranks share a
     * host's memory, when one is offered: the control plane groups such workers by it.
     */
    void describe(Join.Builder join) {
        for (DataPlane plane : offered.values()) {
            if (Transports.reach(plane.transport()) == TransportReach.HOST) {
                join.setShmDomain(plane.domain()).setShmDirectory(plane.description());
            }
        }
    }

    /** The offered plane whose ranks may be as {@code reach} says, or null if none is. */
    @Nullable DataPlane of(TransportReach reach) {
        for (DataPlane plane : offered.values()) {
            if (Transports.reach(plane.transport()) == reach) {
                return plane;
            }
        }
        return null;
    }

    /** The plane the rank runs on now, once the control plane accepted this worker. */
    DataPlane current() {
        return current;
    }

    /**
     * Runs the rank on the plane named in {@code accepted.transport} (the network transport when
     * empty, as an older control plane sends it); returns that plane's transport.
     */
    Transport accept(String acceptedTransport) {
        Transport transport =
                acceptedTransport.isEmpty()
                        ? Transports.require(TransportReach.NETWORK).transport()
                        : Transports.parse("accepted.transport", acceptedTransport);
        DataPlane chosen = require("accepted.transport", transport);
        if (current != chosen) {
            LOG.info(
                    "data plane: {} (the control plane's choice of {})",
                    transport,
                    offered.keySet());
            current = chosen;
        }
        return transport;
    }

    /**
     * Runs this epoch's group over {@code transport} (a control plane on --transport auto picks it
     * per epoch). The rank's runtime stays: the planes of host memory share the CPU one, so a
     * switch to or from a device's plane would need loading again, and is refused.
     */
    void useForEpoch(Transport transport) {
        if (current != null && current.transport().equals(transport)) {
            return;
        }
        DataPlane chosen = require("prepare.transport", transport);
        if (current != null
                && (Transports.reach(transport) == TransportReach.DEVICES
                        || Transports.reach(current.transport()) == TransportReach.DEVICES)) {
            throw new A2aException(
                    "prepare.transport: "
                            + transport
                            + " (expected: "
                            + current.transport()
                            + ", the data plane this rank was loaded for)");
        }
        LOG.info(
                "data plane: {} for this group epoch (was {})",
                transport,
                current == null ? "none" : current.transport());
        current = chosen;
    }

    private DataPlane require(String field, Transport transport) {
        DataPlane chosen = offered.get(transport);
        if (chosen == null) {
            throw new A2aException(
                    field
                            + ": "
                            + transport
                            + " (expected: one of "
                            + offered.keySet()
                            + ", what this worker offered)");
        }
        return chosen;
    }
}
