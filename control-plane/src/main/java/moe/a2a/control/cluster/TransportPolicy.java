package moe.a2a.control.cluster;

import java.util.ArrayList;
import java.util.List;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import org.jspecify.annotations.Nullable;

/**
 * Which data plane a {@link RemoteCluster}'s workers run: one fixed transport ({@link
 * RemoteCluster#TRANSPORTS}), or {@link #AUTO}: nccl when the workers are on GPUs (the first to
 * join an empty cluster offered nccl; every later one must); otherwise per group epoch shm when
 * every member offers it from one shared-memory domain (one host, one pid namespace, one shm
 * directory), a group across hosts (tcp between hosts, shm inside each) when several domains hold
 * the same number of ranks, else tcp ({@code Membership.plan}).
 *
 * @param fixed the transport every epoch runs, or null for auto
 */
public record TransportPolicy(@Nullable Transport fixed) {
    /** How the CLI names {@link #AUTO}. */
    public static final String AUTO_LABEL = "auto";

    /** nccl on GPUs; else shm on one host, tcp between hosts and shm inside each, or tcp. */
    public static final TransportPolicy AUTO = new TransportPolicy(null);

    public TransportPolicy {
        if (fixed != null && !RemoteCluster.TRANSPORTS.contains(fixed)) {
            throw new IllegalArgumentException(
                    "transport: "
                            + fixed
                            + " (expected: one of "
                            + Transport.labels(RemoteCluster.TRANSPORTS)
                            + ")");
        }
    }

    /** Every epoch on {@code transport}. */
    public static TransportPolicy of(Transport transport) {
        return new TransportPolicy(transport);
    }

    /**
     * {@code auto} or one of {@link RemoteCluster#TRANSPORTS}.
     *
     * @throws IllegalArgumentException naming {@code field} and what it may be
     */
    public static TransportPolicy parse(String field, String text) {
        if (text.equalsIgnoreCase(AUTO_LABEL)) {
            return AUTO;
        }
        Transport t;
        try {
            t = Transports.parse(field, text);
        } catch (IllegalArgumentException e) {
            t = null;
        }
        if (t == null || !RemoteCluster.TRANSPORTS.contains(t)) {
            throw new IllegalArgumentException(
                    field
                            + ": "
                            + text
                            + " (expected: one of "
                            + String.join(", ", labels())
                            + ")");
        }
        return new TransportPolicy(t);
    }

    /** What {@link #parse} takes. */
    public static List<String> labels() {
        List<String> out = new ArrayList<>();
        out.add(AUTO_LABEL);
        RemoteCluster.TRANSPORTS.forEach(t -> out.add(t.label()));
        return out;
    }

    public boolean auto() {
        return fixed == null;
    }

    /**
     * The transport a worker must offer to be admitted: the fixed one; the network transport under
     * auto (the device transport once the cluster's workers are on GPUs, which {@code Membership}
     * decides).
     */
    Transport required() {
        return fixed != null ? fixed : network();
    }

    /** The transport between processes on any hosts: what auto falls back to. */
    static Transport network() {
        return Transports.require(TransportReach.NETWORK).transport();
    }

    public String label() {
        return fixed != null ? fixed.label() : AUTO_LABEL;
    }

    @Override
    public String toString() {
        return label();
    }
}
