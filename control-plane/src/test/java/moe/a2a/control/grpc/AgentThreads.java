package moe.a2a.control.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import moe.a2a.comm.DataPlane;
import moe.a2a.control.cluster.RemoteCluster;
import moe.a2a.worker.WorkerAgent;

/** Worker agents {@code worker-0..N-1}, each on a thread of its own, joining over one channel. */
public final class AgentThreads {
    private final List<WorkerAgent> agents = new ArrayList<>();
    private final List<SimpleMeterRegistry> registries = new ArrayList<>();
    private final List<Thread> threads = new ArrayList<>();

    /** Starts {@code world} agents; agent r offers {@code planes.apply(r)}. */
    public AgentThreads(ManagedChannel channel, int world, IntFunction<List<DataPlane>> planes) {
        for (int r = 0; r < world; r++) {
            add(channel, "worker-" + r, r, planes.apply(r));
        }
    }

    /** Starts one more agent, {@code workerId}, asking for {@code rank}. */
    void add(ManagedChannel channel, String workerId, int rank, List<DataPlane> planes) {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        WorkerAgent agent =
                new WorkerAgent(
                        channel,
                        new WorkerAgent.Settings(
                                workerId,
                                rank,
                                "",
                                Duration.ofSeconds(10),
                                Duration.ofMillis(200),
                                "no GPU probe"),
                        planes,
                        registry);
        agents.add(agent);
        registries.add(registry);
        Thread t =
                new Thread(
                        () -> {
                            try {
                                agent.run();
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                        },
                        "agent-" + workerId);
        t.start();
        threads.add(t);
    }

    /** The meters of the {@code i}-th agent started. */
    SimpleMeterRegistry registry(int i) {
        return registries.get(i);
    }

    /** Stops the {@code i}-th agent started (as a worker process that exits) and forgets it. */
    void stop(int i) throws InterruptedException {
        registries.remove(i);
        agents.remove(i).close();
        threads.remove(i).join(10_000);
    }

    /**
     * Waits until {@code cluster}'s group of all agents has formed, or fails saying {@code how}.
     */
    public void awaitFormed(RemoteCluster cluster, String how) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (cluster.healthy() < agents.size() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(cluster.healthy()).as(how).isEqualTo(agents.size());
    }

    /** Closes every agent and waits for its thread. */
    public void close() throws InterruptedException {
        for (WorkerAgent agent : agents) {
            agent.close();
        }
        for (Thread t : threads) {
            t.join(10_000);
        }
    }
}
