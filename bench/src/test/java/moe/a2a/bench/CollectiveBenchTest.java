package moe.a2a.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.ByteBuffer;
import java.util.List;
import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ForwardingCommunicator;
import moe.a2a.comm.RankThreads;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.comm.local.LocalTransportProvider;
import moe.a2a.comm.tcp.TcpTransportProvider;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** nccl-tests' figures, the size sweep, the JSON row, and the results check on a real group. */
class CollectiveBenchTest {

    private static CollectiveCase of(Collective c, int n, long bytes, DType dtype) {
        return new CollectiveCase(c, n, bytes, dtype, ReduceOp.SUM, CollectiveAlgo.AUTO, 0);
    }

    @Test
    void shouldWarmSmallCasesUpUntil64MiBHavePassedAndAtMost1000Times() {
        CollectiveCase tiny = of(Collective.ALLREDUCE, 4, 8, DType.FP32);
        CollectiveCase mib = of(Collective.ALLREDUCE, 4, 1 << 20, DType.FP32);
        CollectiveCase big = of(Collective.ALLREDUCE, 4, 64 << 20, DType.FP32);
        assertThat(CollectiveBench.warmupFor(tiny, 5)).isEqualTo(1000);
        assertThat(CollectiveBench.warmupFor(mib, 5)).isEqualTo(64);
        assertThat(CollectiveBench.warmupFor(mib, 100)).isEqualTo(100);
        assertThat(CollectiveBench.warmupFor(big, 5)).isEqualTo(5);
        assertThat(CollectiveBench.warmupFor(big, 0)).isEqualTo(1);
    }

    @Test
    void shouldApplyNcclTestsBusFactorsWhenRanksVary() {
        assertThat(Collective.ALLREDUCE.busFactor(4)).isEqualTo(1.5);
        assertThat(Collective.ALLREDUCE.busFactor(2)).isEqualTo(1.0);
        assertThat(Collective.ALLGATHER.busFactor(4)).isEqualTo(0.75);
        assertThat(Collective.REDUCESCATTER.busFactor(8)).isEqualTo(0.875);
        assertThat(Collective.ALLTOALL.busFactor(2)).isEqualTo(0.5);
        assertThat(Collective.BROADCAST.busFactor(8)).isEqualTo(1.0);
    }

    @Test
    void shouldDeriveAlgbwAndBusbwFromTheMedianOfTheSlowestRank() {
        // per iteration the slowest rank: 40, 10, 30, 20 us -> median of 4 = (20 + 30) / 2
        long[][] ns = {{40_000, 5_000, 30_000, 1_000}, {1_000, 10_000, 2_000, 20_000}};
        assertThat(CollectiveReport.medianOfMaxUs(ns)).isEqualTo(25.0);
        CollectiveTimes a = new CollectiveTimes(ns[0], 0);
        CollectiveTimes b = new CollectiveTimes(ns[1], 2);
        CollectiveCase c = of(Collective.ALLREDUCE, 2, 1_000_000, DType.FP32);
        CollectiveReport r =
                CollectiveReport.of(c, LocalTransportProvider.LOCAL, List.of(a, b), 80.0);
        assertThat(r.timeUsP50()).isEqualTo(25.0);
        assertThat(r.algbwGbps()).isEqualTo(40.0); // 1e6 B / 25 us
        assertThat(r.busbwGbps()).isEqualTo(40.0); // x 2(N-1)/N = 1 at N = 2
        assertThat(r.busUtilisation()).isEqualTo(0.5);
        assertThat(r.wrong()).isEqualTo(2);
        CollectiveReport four =
                CollectiveReport.of(
                        c.withRanks(4), LocalTransportProvider.LOCAL, List.of(a, b, a, b), 80.0);
        assertThat(four.busbwGbps()).isEqualTo(60.0);
        assertThat(CollectiveReport.medianOfMaxUs(new long[][] {{3_000, 1_000, 2_000}}))
                .isEqualTo(2.0);
    }

    @Test
    void shouldDoubleFromMinToMaxWhenSweeping() {
        assertThat(CollectiveCase.sweep(8, 64)).containsExactly(8L, 16L, 32L, 64L);
        assertThat(CollectiveCase.sweep(8, 100)).containsExactly(8L, 16L, 32L, 64L);
        assertThat(CollectiveCase.sweep(1 << 20, 1 << 20)).containsExactly(1L << 20);
        assertThat(CollectiveCase.sweep(3, 12)).containsExactly(3L, 6L, 12L);
    }

    @Test
    void shouldCutSizesToWholeElementsAndBlocksWhenTheyDoNotDivide() {
        assertThat(of(Collective.ALLREDUCE, 4, 8, DType.FP32).count()).isEqualTo(2);
        assertThat(of(Collective.ALLREDUCE, 4, 7, DType.FP32).bytes()).isEqualTo(4);
        assertThat(of(Collective.ALLGATHER, 4, 8, DType.FP32).bytes()).isEqualTo(16);
        assertThat(of(Collective.ALLTOALL, 3, 64, DType.BF16).count()).isEqualTo(30);
        assertThat(of(Collective.REDUCESCATTER, 4, 64 << 20, DType.FP32).blockCount())
                .isEqualTo(4 << 20);
        assertThat(of(Collective.BROADCAST, 4, 64 << 20, DType.FP16).algoLabel()).isEqualTo("tree");
        assertThat(of(Collective.ALLREDUCE, 4, 8, DType.FP16).algoLabel()).isEqualTo("tree");
        assertThat(of(Collective.ALLREDUCE, 4, 64 << 20, DType.FP16).algoLabel()).isEqualTo("ring");
        assertThat(of(Collective.ALLGATHER, 4, 8, DType.FP16).redop()).isEqualTo("none");
        assertThat(of(Collective.ALLGATHER, 4, 8, DType.FP16).rootColumn()).isEqualTo(-1);
    }

    @Test
    void shouldWriteTheRowFieldsWhenReportingJson() {
        CollectiveCase c = of(Collective.ALLGATHER, 4, 64 << 20, DType.BF16);
        CollectiveTimes t = new CollectiveTimes(new long[] {1_000_000}, 0);
        JsonObject row =
                JsonParser.parseString(
                                CollectiveReport.of(
                                                c,
                                                TcpTransportProvider.TCP,
                                                List.of(t, t, t, t),
                                                2.0)
                                        .json(0.5))
                        .getAsJsonObject();
        assertThat(row.keySet())
                .startsWith(
                        "collective",
                        "transport",
                        "ranks",
                        "bytes",
                        "dtype",
                        "algo",
                        "time_us_p50",
                        "algbw_gbs",
                        "busbw_gbs",
                        "wrong")
                .contains("bus_utilisation", "link_gbs", "scaling_efficiency");
        assertThat(row.get("collective").getAsString()).isEqualTo("allgather");
        assertThat(row.get("transport").getAsString()).isEqualTo("tcp");
        assertThat(row.get("ranks").getAsInt()).isEqualTo(4);
        assertThat(row.get("bytes").getAsLong()).isEqualTo(64 << 20);
        assertThat(row.get("dtype").getAsString()).isEqualTo("bf16");
        assertThat(row.get("algo").getAsString()).isEqualTo("ring");
        assertThat(row.get("time_us_p50").getAsDouble()).isEqualTo(1000.0);
        assertThat(row.get("wrong").getAsLong()).isZero();
    }

    @ParameterizedTest
    @EnumSource(Collective.class)
    void shouldFindNoWrongElementsWhenTheGroupIsRight(Collective collective) throws Exception {
        for (DType dtype : DType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                for (CollectiveAlgo algo : List.of(CollectiveAlgo.RING, CollectiveAlgo.TREE)) {
                    CollectiveCase c = new CollectiveCase(collective, 3, 300, dtype, op, algo, 2);
                    assertThat(run(c, comm -> comm)).as("%s %s %s", dtype, op, algo).isZero();
                }
            }
        }
    }

    @Test
    void shouldCountWrongElementsWhenARankCorruptsItsResult() throws Exception {
        CollectiveCase c = of(Collective.ALLGATHER, 2, 64, DType.FP32);
        long wrong =
                run(
                        c,
                        comm ->
                                new ForwardingCommunicator(comm) {
                                    @Override
                                    public void allGather(
                                            ByteBuffer send, ByteBuffer recv, int bytesPerRank) {
                                        super.allGather(send, recv, bytesPerRank);
                                        if (rank() == 1) {
                                            recv.putInt(4, recv.getInt(4) ^ 1);
                                            recv.putInt(8, recv.getInt(8) ^ 1);
                                        }
                                    }
                                });
        // two elements wrong in each of the two checked iterations (the first and the last)
        assertThat(wrong).isEqualTo(4);
    }

    private static long run(CollectiveCase c, java.util.function.UnaryOperator<Communicator> wrap)
            throws Exception {
        LocalGroup group = new LocalGroup(c.ranks());
        List<CollectiveTimes> times =
                RankThreads.run(
                        c.ranks(),
                        r -> CollectiveBench.rank(c, wrap.apply(group.communicator(r)), 1, 2));
        assertThat(times).allSatisfy(t -> assertThat(t.ns()).hasSize(2));
        return times.stream().mapToLong(CollectiveTimes::wrong).sum();
    }
}
