package moe.a2a.comm.local;

import java.util.ArrayList;
import java.util.List;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.DataPlane;
import moe.a2a.comm.GroupEpoch;
import moe.a2a.comm.GroupPeers;
import moe.a2a.comm.PlaneBinding;
import moe.a2a.comm.PlaneSettings;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportProbe;
import moe.a2a.comm.TransportProvider;
import moe.a2a.comm.TransportReach;

/**
 * A transport added the way any is: one class and one service entry (this test's {@code
 * META-INF/services}). Its "network" is a {@link LocalGroup} per group id, shared by the planes of
 * this JVM, so that {@link TransportsTest} can form a group through the provider alone.
 */
public final class PluggedTransportProvider implements TransportProvider {
    public static final Transport PLUGGED = new Transport("plugged");

    private static final List<Long> GROUP_IDS = new ArrayList<>();
    private static final List<LocalGroup> GROUPS = new ArrayList<>();

    @Override
    public Transport transport() {
        return PLUGGED;
    }

    @Override
    public TransportReach reach() {
        return TransportReach.NETWORK;
    }

    @Override
    public int order() {
        return 7;
    }

    @Override
    public TransportProbe probe(PlaneSettings settings) {
        return settings.dataPort() < 0
                ? TransportProbe.unusable("--data-port: " + settings.dataPort())
                : TransportProbe.USABLE;
    }

    @Override
    public DataPlane dataPlane(PlaneSettings settings) {
        return new DataPlane() {
            private GroupEpoch bound;

            @Override
            public Transport transport() {
                return PLUGGED;
            }

            @Override
            public PlaneBinding bind(GroupEpoch epoch) {
                bound = epoch;
                return PlaneBinding.at(settings.dataHost() + ":" + epoch.rank());
            }

            @Override
            public Communicator form(GroupPeers peers) {
                return group(bound.groupId(), bound.worldSize()).communicator(bound.rank());
            }

            @Override
            public void drop() {
                bound = null;
            }

            @Override
            public void close() {
                drop();
            }
        };
    }

    private static synchronized LocalGroup group(long id, int size) {
        int at = GROUP_IDS.indexOf(id);
        if (at >= 0) {
            return GROUPS.get(at);
        }
        GROUP_IDS.add(id);
        GROUPS.add(new LocalGroup(size));
        return GROUPS.get(GROUPS.size() - 1);
    }
}
