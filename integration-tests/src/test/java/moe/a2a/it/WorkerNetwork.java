package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * Workers on hosts of their own, on one machine: a network namespace per worker, each joined by a
 * veth pair to a bridge in this namespace, where the control plane and the clients stay. A link
 * between two workers is cut with a packet filter in one of their namespaces (both directions
 * dropped, as a failed switch port or a firewall would), while both still reach the control plane;
 * a worker's outgoing link is slowed with a token bucket (tc tbf). Needs root, iproute2 and
 * iptables; skipped without them, unless {@code MOE_A2A_IT_REQUIRE_NETNS=1} (which .ci/run sets).
 */
final class WorkerNetwork implements AutoCloseable {
    /** The bridge's address: where workers reach the control plane. */
    static final String HOST = "10.79.0.1";

    private final String id = UUID.randomUUID().toString().substring(0, 4);
    private final int workers;
    private final List<String> namespaces = new ArrayList<>();
    private final List<Path> mounts = new ArrayList<>();

    private WorkerNetwork(int workers) {
        this.workers = workers;
    }

    /** Brings up {@code workers} namespaces, or skips the test where it cannot. */
    static WorkerNetwork up(int workers) throws Exception {
        boolean available =
                "root".equals(System.getProperty("user.name"))
                        && run("ip", "-V") == 0
                        && run("iptables", "--version") == 0;
        if ("1".equals(System.getenv("MOE_A2A_IT_REQUIRE_NETNS"))) {
            assertThat(available).as("root, iproute2 and iptables (see .ci/run)").isTrue();
        }
        assumeTrue(available, "network namespaces need root, iproute2 and iptables: skipped");
        WorkerNetwork net = new WorkerNetwork(workers);
        try {
            net.create();
        } catch (Exception e) {
            net.close();
            throw e;
        }
        return net;
    }

    private void create() throws Exception {
        must("ip", "link", "add", bridge(), "type", "bridge");
        must("ip", "addr", "add", HOST + "/24", "dev", bridge());
        must("ip", "link", "set", bridge(), "up");
        for (int w = 0; w < workers; w++) {
            String ns = "moe-" + id + "-w" + w;
            must("ip", "netns", "add", ns);
            namespaces.add(ns);
            String hostEnd = "m" + id + "h" + w;
            must("ip", "link", "add", hostEnd, "type", "veth", "peer", "name", "eth0", "netns", ns);
            must("ip", "link", "set", hostEnd, "master", bridge());
            must("ip", "link", "set", hostEnd, "up");
            must("ip", "-n", ns, "addr", "add", address(w) + "/24", "dev", "eth0");
            must("ip", "-n", ns, "link", "set", "eth0", "up");
            must("ip", "-n", ns, "link", "set", "lo", "up");
        }
    }

    /**
     * The flags of a control plane on {@link #HOST} for these workers: plaintext, tcp, {@code
     * redundantExperts} extra slots, the given exchange timeout and a 3 s heartbeat timeout.
     */
    static List<String> controlPlaneFlags(
            int metricsPort, int redundantExperts, long exchangeTimeoutMs) {
        return controlPlaneFlags("tcp", metricsPort, redundantExperts, exchangeTimeoutMs);
    }

    /** As {@link #controlPlaneFlags(int, int, long)}, on {@code transport} (tcp or auto). */
    static List<String> controlPlaneFlags(
            String transport, int metricsPort, int redundantExperts, long exchangeTimeoutMs) {
        return List.of(
                "--host",
                HOST,
                "--plaintext",
                "--metrics-port",
                Integer.toString(metricsPort),
                "--transport",
                transport,
                "--redundant-experts",
                Integer.toString(redundantExperts),
                "--exchange-timeout",
                exchangeTimeoutMs + "ms",
                "--heartbeat-timeout",
                "3s");
    }

    /** Worker {@code w}'s address in its namespace. */
    static String address(int w) {
        return "10.79.0." + (10 + w);
    }

    /**
     * A TCP worker in namespace {@code w}, logging to {@code name}.log, that joins the control
     * plane's cluster port {@code clusterPort} on {@link #HOST} as rank {@code w}.
     */
    CliProcess worker(Path dir, String name, int clusterPort, int w) throws IOException {
        return workerOn(w, dir, name, clusterPort, w, "--transport", "tcp");
    }

    /**
     * A worker on host {@code host} (its namespace; several workers may share one) that offers tcp
     * and shm in {@code shmDir} ({@code --transport auto}), logging to {@code name}.log, joining
     * the control plane's cluster port {@code clusterPort} on {@link #HOST} as rank {@code rank}.
     */
    CliProcess hostWorker(Path dir, String name, int clusterPort, int rank, int host, Path shmDir)
            throws IOException {
        return workerOn(
                host,
                dir,
                name,
                clusterPort,
                rank,
                "--transport",
                "auto",
                "--shm-dir",
                shmDir.toString());
    }

    private CliProcess workerOn(
            int host, Path dir, String name, int clusterPort, int rank, String... transport)
            throws IOException {
        List<String> args = new ArrayList<>();
        args.addAll(
                List.of(
                        "worker",
                        "--control-plane",
                        HOST + ":" + clusterPort,
                        "--rank",
                        Integer.toString(rank),
                        "--data-host",
                        address(host),
                        "--metrics-port",
                        "0"));
        args.addAll(List.of(transport));
        return CliProcess.moeA2aUnder(
                List.of("ip", "netns", "exec", namespaces.get(host)),
                dir,
                name,
                args.toArray(String[]::new));
    }

    /**
     * A shared-memory folder for each host: a tmpfs of {@code size} (e.g. "16m") under {@code
     * parent}, unmounted when the network closes. Small, so that it can be filled.
     */
    List<Path> mountShmFolders(Path parent, String size) throws Exception {
        List<Path> folders = new ArrayList<>();
        for (int h = 0; h < workers; h++) {
            Path folder = Files.createDirectory(parent.resolve("host-" + h + "-shm"));
            must("mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", folder.toString());
            mounts.add(folder);
            folders.add(folder);
        }
        return folders;
    }

    /** Drops every packet between workers {@code a} and {@code b}, both ways. */
    void cut(int a, int b) throws Exception {
        filter("-A", a, b);
    }

    /** Lets packets between workers {@code a} and {@code b} through again. */
    void heal(int a, int b) throws Exception {
        filter("-D", a, b);
    }

    /** Shapes worker {@code w}'s outgoing traffic to {@code rate} (tc tbf, e.g. "1mbit"). */
    void slow(int w, String rate) throws Exception {
        must(
                "ip",
                "netns",
                "exec",
                namespaces.get(w),
                "tc",
                "qdisc",
                "add",
                "dev",
                "eth0",
                "root",
                "tbf",
                "rate",
                rate,
                "burst",
                "32kbit",
                "latency",
                "400ms");
    }

    /** Takes the shaping off worker {@code w}'s link. */
    void unslow(int w) throws Exception {
        must("ip", "netns", "exec", namespaces.get(w), "tc", "qdisc", "del", "dev", "eth0", "root");
    }

    private void filter(String op, int a, int b) throws Exception {
        String ns = namespaces.get(a);
        must("ip", "netns", "exec", ns, "iptables", op, "INPUT", "-s", address(b), "-j", "DROP");
        must("ip", "netns", "exec", ns, "iptables", op, "OUTPUT", "-d", address(b), "-j", "DROP");
    }

    private String bridge() {
        return "m" + id + "br";
    }

    @Override
    public void close() throws IOException {
        try {
            for (Path folder : mounts) {
                run("umount", "-l", folder.toString());
            }
            for (String ns : namespaces) {
                run("ip", "netns", "del", ns);
            }
            run("ip", "link", "del", bridge());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void must(String... command) throws Exception {
        assertThat(run(command)).as(String.join(" ", command)).isZero();
    }

    /** Runs {@code command}, its output dropped; its exit code, or -1 when it cannot start. */
    static int run(String... command) throws IOException, InterruptedException {
        Process p;
        try {
            p = new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (IOException e) {
            return -1;
        }
        p.getInputStream().transferTo(OutputStream.nullOutputStream());
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return -1;
        }
        return p.exitValue();
    }
}
