package moe.a2a.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ForwardingCommunicator;
import moe.a2a.comm.RankThreads;
import moe.a2a.comm.SegmentWriter;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.DispatchMode;
import moe.a2a.dispatch.HostTopology;
import moe.a2a.dispatch.Placement;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The benchmark's own validation passes on small workloads and catches a corrupted byte. */
@Timeout(60)
class BenchHarnessTest {
    static final BenchWorkload SMALL = new BenchWorkload("small", 3, 40, 64, 12, 3, 0, false, 42);
    static final BenchWorkload SKEWED =
            new BenchWorkload("small-skew", 4, 33, 32, 16, 4, 1.2, true, 7);

    @Test
    void shouldValidateDispatcherPathWhenRoutingIsUniformOrSkewed() throws Exception {
        for (BenchWorkload w : List.of(SMALL, SKEWED)) {
            LocalGroup group = new LocalGroup(w.worldSize(), TimeUnit.SECONDS.toNanos(20));
            List<RankTimes> times =
                    RankThreads.run(
                            w.worldSize(),
                            rank -> DispatcherBench.run(w, group.communicator(rank), 1, 3));
            assertThat(times)
                    .as(w.name())
                    .allMatch(RankTimes::ok)
                    .allMatch(t -> t.dispatchNs().length == 3);
        }
    }

    @Test
    void shouldValidateDispatcherPathWhenTokensTravelAsFp8() throws Exception {
        LocalGroup group = new LocalGroup(SKEWED.worldSize(), TimeUnit.SECONDS.toNanos(20));
        List<RankTimes> times =
                RankThreads.run(
                        SKEWED.worldSize(),
                        rank ->
                                BenchRun.rank(
                                        SKEWED,
                                        BenchScope.DISPATCHER,
                                        group.communicator(rank),
                                        1,
                                        2,
                                        DispatchDType.FP8));
        assertThat(times).allMatch(RankTimes::ok);
    }

    /**
     * Low-latency mode, bf16 and FP8, on the skewed workload and with fewer tokens: the same
     * validation passes; a corrupted byte fails it.
     */
    @Test
    void shouldValidateLowLatencyPath() throws Exception {
        for (BenchWorkload w : List.of(SKEWED, SMALL.withTokens(1))) {
            for (DispatchDType dtype : DispatchDType.values()) {
                LocalGroup group = new LocalGroup(w.worldSize(), TimeUnit.SECONDS.toNanos(20));
                List<RankTimes> times =
                        RankThreads.run(
                                w.worldSize(),
                                rank ->
                                        BenchRun.rank(
                                                w,
                                                BenchScope.DISPATCHER,
                                                group.communicator(rank),
                                                1,
                                                2,
                                                dtype,
                                                DispatchMode.LOW_LATENCY,
                                                0,
                                                null));
                assertThat(times).as("%s %s", w.name(), dtype).allMatch(RankTimes::ok);
            }
        }
        LocalGroup group = new LocalGroup(SMALL.worldSize(), TimeUnit.SECONDS.toNanos(20));
        List<RankTimes> corrupted =
                RankThreads.run(
                        SMALL.worldSize(),
                        rank ->
                                DispatcherBench.run(
                                        SMALL,
                                        corrupting(group.communicator(rank)),
                                        0,
                                        1,
                                        DispatchDType.BF16,
                                        DispatchMode.LOW_LATENCY,
                                        Placement.contiguous(SMALL.experts(), SMALL.worldSize()),
                                        null));
        assertThat(corrupted).anyMatch(t -> !t.ok());
    }

    /** Replicas planned for the skewed loads: every rank still gets and returns the right rows. */
    @Test
    void shouldValidateDispatcherPathWhenExpertsHaveReplicas() throws Exception {
        LocalGroup group = new LocalGroup(SKEWED.worldSize(), TimeUnit.SECONDS.toNanos(20));
        int redundant = SKEWED.worldSize() * 2;
        List<RankTimes> times =
                RankThreads.run(
                        SKEWED.worldSize(),
                        rank ->
                                BenchRun.rank(
                                        SKEWED,
                                        BenchScope.DISPATCHER,
                                        group.communicator(rank),
                                        1,
                                        2,
                                        DispatchDType.BF16,
                                        redundant));
        assertThat(times).allMatch(RankTimes::ok);
        int[][] placed = BenchRouting.rows(SKEWED, BenchPlacement.of(SKEWED, redundant));
        int[][] plain = BenchRouting.rows(SKEWED);
        assertThat(maxOverMean(placed))
                .as("the planned replicas even out the tokens per rank")
                .isLessThan(maxOverMean(plain));
    }

    /** max/mean over ranks of the tokens each receives. */
    private static double maxOverMean(int[][] rows) {
        double[] in = new double[rows.length];
        for (int[] src : rows) {
            for (int d = 0; d < src.length; d++) {
                in[d] += src[d];
            }
        }
        double max = java.util.Arrays.stream(in).max().orElse(0);
        return max * in.length / java.util.Arrays.stream(in).sum();
    }

    @Test
    void shouldValidateTransportPath() throws Exception {
        LocalGroup group = new LocalGroup(SMALL.worldSize(), TimeUnit.SECONDS.toNanos(20));
        int[][] rows = BenchRouting.rows(SMALL);
        List<RankTimes> times =
                RankThreads.run(
                        SMALL.worldSize(),
                        rank -> TransportBench.run(SMALL, group.communicator(rank), rows, 1, 2));
        assertThat(times).allMatch(RankTimes::ok);
    }

    @Test
    void shouldFailValidationWhenAReceivedByteIsCorrupted() throws Exception {
        LocalGroup group = new LocalGroup(SMALL.worldSize(), TimeUnit.SECONDS.toNanos(20));
        int[][] rows = BenchRouting.rows(SMALL);
        List<RankTimes> transport =
                RankThreads.run(
                        SMALL.worldSize(),
                        rank ->
                                TransportBench.run(
                                        SMALL, corrupting(group.communicator(rank)), rows, 0, 1));
        assertThat(transport).anyMatch(t -> !t.ok());
        LocalGroup second = new LocalGroup(SMALL.worldSize(), TimeUnit.SECONDS.toNanos(20));
        List<RankTimes> dispatcher =
                RankThreads.run(
                        SMALL.worldSize(),
                        rank ->
                                DispatcherBench.run(
                                        SMALL, corrupting(second.communicator(rank)), 0, 1));
        assertThat(dispatcher).anyMatch(t -> !t.ok());
    }

    /**
     * Two hosts of two ranks: the hierarchical path passes the same validation as the flat one and
     * sends fewer bytes across hosts; a byte flipped on the rail fails it.
     */
    @Test
    void shouldValidateHierarchicalPathAndSendLessAcrossHosts() throws Exception {
        HostTopology topology = HostTopology.contiguous(2, 2);
        LocalGroup world = new LocalGroup(4, TimeUnit.SECONDS.toNanos(20));
        List<HostBench.Result> flat =
                RankThreads.run(
                        4,
                        rank -> HostBench.flat(SKEWED, topology, world.communicator(rank), 1, 2));
        List<HostBench.Result> hier = hierarchical(topology, false);
        assertThat(flat).allMatch(r -> r.times().ok());
        assertThat(hier).allMatch(r -> r.times().ok());
        long flatBytes = flat.stream().mapToLong(HostBench.Result::interHostBytesPerStep).sum();
        long hierBytes = hier.stream().mapToLong(HostBench.Result::interHostBytesPerStep).sum();
        assertThat(hierBytes).isPositive().isLessThan(flatBytes);
        assertThat(hierarchical(topology, true)).anyMatch(r -> !r.times().ok());
    }

    private static List<HostBench.Result> hierarchical(HostTopology topology, boolean corrupt)
            throws Exception {
        long timeoutNs = TimeUnit.SECONDS.toNanos(20);
        LocalGroup[] rails = {new LocalGroup(2, timeoutNs), new LocalGroup(2, timeoutNs)};
        LocalGroup[] hosts = {new LocalGroup(2, timeoutNs), new LocalGroup(2, timeoutNs)};
        return RankThreads.run(
                4,
                rank -> {
                    Communicator rail =
                            rails[topology.local(rank)].communicator(topology.host(rank));
                    return HostBench.hierarchical(
                            SKEWED,
                            topology,
                            corrupt ? corrupting(rail) : rail,
                            hosts[topology.host(rank)].communicator(topology.local(rank)),
                            0,
                            1);
                });
    }

    /** Flips the first received byte of every exchange into a receive buffer on rank 1. */
    private static Communicator corrupting(Communicator inner) {
        return new ForwardingCommunicator(inner) {
            @Override
            public void allToAllV(
                    long step,
                    ExchangePhase phase,
                    ByteBuffer send,
                    long[] sendCounts,
                    ByteBuffer recv,
                    long[] recvCounts) {
                inner.allToAllV(step, phase, send, sendCounts, recv, recvCounts);
                corrupt(recv);
            }

            @Override
            public void allToAllV(
                    long step,
                    ExchangePhase phase,
                    SegmentWriter writer,
                    long[] sendCounts,
                    ByteBuffer recv,
                    long[] recvCounts) {
                inner.allToAllV(step, phase, writer, sendCounts, recv, recvCounts);
                corrupt(recv);
            }

            private void corrupt(ByteBuffer recv) {
                if (inner.rank() == 1 && recv.capacity() > 0) {
                    recv.put(0, (byte) (recv.get(0) ^ 0x40));
                }
            }
        };
    }
}
