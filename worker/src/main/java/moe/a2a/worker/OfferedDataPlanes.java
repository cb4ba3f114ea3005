package moe.a2a.worker;

import java.util.EnumMap;
import java.util.List;
import java.util.Set;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Transport;
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

    private final EnumMap<Transport, DataPlane> offered = new EnumMap<>(Transport.class);

    /** Null until the control plane accepts this worker. */
    private DataPlane current;

    OfferedDataPlanes(List<DataPlane> dataPlanes) {
        for (DataPlane plane : dataPlanes) {
            offered.put(plane.transport(), plane);
        }
    }

    /** The transports offered, in the order of {@link Transport}. */
    Set<Transport> transports() {
        return offered.keySet();
    }

    /** Adds each offered plane's own details to {@code join}. */
    void describe(Join.Builder join) {
        for (DataPlane plane : offered.values()) {
            plane.describe(join);
        }
    }

    /** The offered plane of {@code transport}, or null if this worker did not offer it. */
    @Nullable DataPlane get(Transport transport) {
        return offered.get(transport);
    }

    /** The plane the rank runs on now, once the control plane accepted this worker. */
    DataPlane current() {
        return current;
    }

    /**
     * Runs the rank on the plane named in {@code accepted.transport} (tcp when empty, as an older
     * control plane sends it); returns that plane's transport.
     */
    Transport accept(String acceptedTransport) {
        Transport transport =
                acceptedTransport.isEmpty()
                        ? Transport.TCP
                        : Transport.parse("accepted.transport", acceptedTransport);
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
     * per epoch). The rank's runtime stays: tcp and shm share the CPU one, so only a switch between
     * them is possible without loading again.
     */
    void useForEpoch(Transport transport) {
        if (current != null && current.transport() == transport) {
            return;
        }
        DataPlane chosen = require("prepare.transport", transport);
        if (current != null
                && (transport == Transport.NCCL || current.transport() == Transport.NCCL)) {
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
