package moe.a2a.worker;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import moe.a2a.v1.LinksProbed;
import moe.a2a.v1.ProbeLinks;
import moe.a2a.v1.WorkerMessage;

/**
 * Answers a {@link ProbeLinks}: opens a plain TCP connection to each peer's data address and closes
 * it at once. A connection that comes up proves the link works both ways (the peer's answer came
 * back); the peer's data plane drops it, since it never says HELLO. Runs on the worker's data-plane
 * thread, which is idle while the rank is set aside.
 */
final class LinkProbe {
    private LinkProbe() {}

    static WorkerMessage answer(ProbeLinks probe) {
        LinksProbed.Builder probed = LinksProbed.newBuilder().setProbeId(probe.getProbeId());
        int timeoutMs = Math.clamp(probe.getTimeoutMs(), 1, 60_000);
        for (int i = 0; i < probe.getPeersCount() && i < probe.getAddressesCount(); i++) {
            if (reachable(probe.getAddresses(i), timeoutMs)) {
                probed.addReachable(probe.getPeers(i));
            }
        }
        return WorkerMessage.newBuilder().setLinksProbed(probed).build();
    }

    private static boolean reachable(String address, int timeoutMs) {
        int colon = address.lastIndexOf(':');
        if (colon <= 0) {
            return false;
        }
        try (Socket socket = new Socket()) {
            socket.connect(
                    new InetSocketAddress(
                            address.substring(0, colon),
                            Integer.parseInt(address.substring(colon + 1))),
                    timeoutMs);
            return true;
        } catch (IOException | NumberFormatException e) {
            return false;
        }
    }
}
