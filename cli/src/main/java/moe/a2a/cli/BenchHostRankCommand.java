package moe.a2a.cli;

import com.google.gson.Gson;
import java.net.InetAddress;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import moe.a2a.bench.BenchWorkloads;
import moe.a2a.bench.HostBench;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.shm.ShmCommunicator;
import moe.a2a.comm.shm.ShmConfig;
import moe.a2a.comm.tcp.TcpTransport;
import moe.a2a.dispatch.HostTopology;
import moe.a2a.workload.BenchWorkload;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * One rank of the multi-host benchmark ({@code benchmarks/multihost/run.sh}), each host a network
 * namespace: flat, every rank joins one tcp group; hierarchical, its rail over tcp (one rank per
 * host) and its host group over shared memory. Writes {@code rank-<r>.json} in the run's folder.
 */
@Command(
        name = "bench-host-rank",
        hidden = true,
        description = "One rank of the multi-host benchmark (benchmarks/multihost/run.sh).")
final class BenchHostRankCommand implements Callable<Integer> {
    private static final Gson GSON = new Gson();

    /** How a rank's tokens reach other hosts. */
    enum Mode {
        FLAT,
        HIERARCHICAL
    }

    @Option(names = "--workload", required = true)
    String workload;

    @Option(names = "--rank", required = true)
    int rank;

    @Option(names = "--hosts", required = true)
    int hosts;

    @Option(names = "--mode", required = true)
    Mode mode;

    @Option(names = "--address", required = true, description = "This host's address to listen on.")
    String address;

    @Option(names = "--dir", required = true, description = "The run's folder, seen by every rank.")
    Path dir;

    @Option(names = "--shm-dir", defaultValue = "/dev/shm")
    Path shmDir;

    @Option(names = "--group-id", required = true)
    long groupId;

    @Option(names = "--iters", required = true)
    int iters;

    @Option(names = "--warmup", required = true)
    int warmup;

    @Override
    public Integer call() throws Exception {
        BenchWorkload w = BenchWorkloads.resolve(workload);
        int n = w.worldSize();
        if (hosts < 1 || n % hosts != 0) {
            throw new IllegalArgumentException(
                    "--hosts: "
                            + hosts
                            + " (expected: a divisor of "
                            + workload
                            + "'s "
                            + n
                            + " ranks)");
        }
        HostTopology topology = HostTopology.contiguous(hosts, n / hosts);
        InetAddress bind = InetAddress.getByName(address);
        long timeoutNs = ChildRankGroup.TIMEOUT_NS;
        try (TcpTransport tcp = new TcpTransport(1)) {
            HostBench.Result result;
            if (mode == Mode.FLAT) {
                Communicator world =
                        ChildRankGroup.tcp(tcp, rank, n, groupId, bind, dir, "world", timeoutNs);
                result = HostBench.flat(w, topology, world, warmup, iters);
                write(result);
                ChildRankGroup.finish(world, dir, rank, n, timeoutNs);
            } else {
                int host = topology.host(rank);
                int local = topology.local(rank);
                Communicator rail =
                        ChildRankGroup.tcp(
                                tcp,
                                host,
                                hosts,
                                groupId + 1 + local,
                                bind,
                                dir,
                                "rail" + local,
                                timeoutNs);
                Communicator hostGroup;
                try {
                    hostGroup =
                            ShmCommunicator.open(
                                    new ShmConfig(
                                            local,
                                            topology.ranksPerHost(),
                                            groupId + 1 + topology.ranksPerHost() + host,
                                            shmDir,
                                            timeoutNs));
                } catch (RuntimeException e) {
                    rail.close();
                    throw e;
                }
                result = HostBench.hierarchical(w, topology, rail, hostGroup, warmup, iters);
                write(result);
                ChildRankGroup.finish(
                        HostBench.barrier(rail, hostGroup),
                        List.of(hostGroup, rail),
                        dir,
                        rank,
                        n,
                        timeoutNs);
            }
        }
        return 0;
    }

    private void write(HostBench.Result result) throws Exception {
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("mode", mode.name().toLowerCase(Locale.ROOT));
        json.put("workload", workload);
        json.put("rank", rank);
        json.put("ok", result.times().ok());
        json.put("inter_host_bytes_per_step", result.interHostBytesPerStep());
        json.put("dispatch_ns", result.times().dispatchNs());
        json.put("combine_ns", result.times().combineNs());
        PublishedFiles.publish(dir.resolve("rank-" + rank + ".json"), GSON.toJson(json));
    }
}
