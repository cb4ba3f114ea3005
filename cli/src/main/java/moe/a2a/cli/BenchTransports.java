package moe.a2a.cli;

import java.util.Iterator;
import java.util.List;
import moe.a2a.comm.Transport;

/** The transports {@code bench} runs its workloads on here (GPU checks: scripts/gpu-check.sh). */
final class BenchTransports implements Iterable<String> {
    static final List<Transport> ALL = List.of(Transport.LOCAL, Transport.TCP, Transport.SHM);

    @Override
    public Iterator<String> iterator() {
        return ALL.stream().map(Transport::label).iterator();
    }
}
