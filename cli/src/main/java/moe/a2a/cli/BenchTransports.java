package moe.a2a.cli;

import java.util.Iterator;
import java.util.List;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;

/**
 * The transports {@code bench} runs its workloads on here: every one on the class path but the
 * device transports (GPU checks: scripts/gpu-check.sh).
 */
final class BenchTransports implements Iterable<String> {
    static final List<Transport> ALL =
            Transports.transports(
                    Transports.all().stream()
                            .filter(p -> p.reach() != TransportReach.DEVICES)
                            .toList());

    @Override
    public Iterator<String> iterator() {
        return ALL.stream().map(Transport::label).iterator();
    }
}
