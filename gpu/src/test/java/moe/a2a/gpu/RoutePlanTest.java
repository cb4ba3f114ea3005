package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.SplittableRandom;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.RankThreads;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.dispatch.CapacityFilter;
import moe.a2a.dispatch.DispatchLayout;
import moe.a2a.dispatch.DispatchResult;
import moe.a2a.dispatch.Dispatcher;
import moe.a2a.dispatch.Placement;
import moe.a2a.kernels.DType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The GPU path's index lists, checked without a GPU: the kernels of {@code kernels.cu} are replayed
 * in Java ({@link KernelReplays}) on {@link RoutePlan}'s lists, over an in-process group, and must
 * reproduce the CPU {@link Dispatcher} bit for bit — the received rows and the combined output with
 * identity experts, for tokens in every dtype (bf16 rows grouped as they came, fp16 and fp32 rows
 * widened to fp32 for the fp32 GEMMs).
 */
class RoutePlanTest {
    private static final int TOKENS = 37;
    private static final int HIDDEN = 24;
    private static final int EXPERTS = 12;
    private static final int TOP_K = 3;

    /**
     * With {@code drops}, as under an expert capacity: some pairs are {@link
     * CapacityFilter#DROPPED} and token 0 loses all of them, so it goes nowhere and sums to 0.
     */
    @ParameterizedTest
    @CsvSource({
        "1, false, BF16",
        "3, false, BF16",
        "4, false, BF16",
        "1, true, BF16",
        "4, true, BF16",
        "3, false, FP16",
        "4, true, FP16",
        "3, false, FP32",
        "4, true, FP32"
    })
    void shouldReproduceCpuDispatchAndCombineBitForBit(int n, boolean drops, DType dtype)
            throws Exception {
        long seed = 900 + n + 10L * dtype.ordinal();
        Placement placement = Placement.contiguous(EXPERTS, n);
        LocalGroup cpuGroup = new LocalGroup(n);
        LocalGroup simGroup = new LocalGroup(n);
        RankThreads.run(
                n,
                rank -> {
                    SplittableRandom random = new SplittableRandom(seed * 31 + rank);
                    int rowBytes = HIDDEN * dtype.sizeBytes();
                    ByteBuffer tokens =
                            ByteBuffer.allocateDirect(TOKENS * rowBytes)
                                    .order(ByteOrder.LITTLE_ENDIAN);
                    float[] values = new float[TOKENS * HIDDEN];
                    for (int i = 0; i < values.length; i++) {
                        values[i] = (float) random.nextDouble(-2, 2);
                    }
                    dtype.encode(values, 0, values.length, tokens, 0);
                    int[] ids = new int[TOKENS * TOP_K];
                    float[] weights = new float[TOKENS * TOP_K];
                    for (int t = 0; t < TOKENS; t++) {
                        int first = random.nextInt(EXPERTS);
                        for (int k = 0; k < TOP_K; k++) {
                            ids[t * TOP_K + k] = (first + k * (1 + random.nextInt(3))) % EXPERTS;
                            weights[t * TOP_K + k] = (float) random.nextDouble(0.05, 1);
                        }
                        if (ids[t * TOP_K + 1] == ids[t * TOP_K]
                                || ids[t * TOP_K + 2] == ids[t * TOP_K]
                                || ids[t * TOP_K + 2] == ids[t * TOP_K + 1]) {
                            ids[t * TOP_K + 1] = (first + 1) % EXPERTS;
                            ids[t * TOP_K + 2] = (first + 2) % EXPERTS;
                        }
                    }

                    if (drops) {
                        for (int i = 0; i < ids.length; i++) {
                            if (i < TOP_K || i % 5 == 1) {
                                ids[i] = CapacityFilter.DROPPED;
                            }
                        }
                    }

                    // The CPU path, identity experts.
                    Dispatcher cpu =
                            new Dispatcher(cpuGroup.communicator(rank), placement, HIDDEN, TOP_K);
                    DispatchResult result = cpu.dispatch(tokens, TOKENS, dtype, ids, weights);
                    ByteBuffer cpuRecv =
                            ByteBuffer.allocateDirect(
                                    Math.max(1, result.numRecvTokens() * rowBytes));
                    for (int j = 0; j < result.numRecvTokens(); j++) {
                        result.copyRecvToken(j, cpuRecv, j * rowBytes);
                    }
                    FloatBuffer identity =
                            FloatBuffer.allocate(Math.max(1, result.numExpertRows() * HIDDEN));
                    int at = 0;
                    for (int slot = 0; slot < result.handle().localExperts(); slot++) {
                        result.gather(slot, identity, at * HIDDEN);
                        at += result.handle().recvTokensPerLocalExpert(slot);
                    }
                    FloatBuffer cpuOut =
                            ByteBuffer.allocateDirect(TOKENS * HIDDEN * Float.BYTES)
                                    .order(ByteOrder.nativeOrder())
                                    .asFloatBuffer();
                    cpu.combine(identity, result.handle(), cpuOut);

                    // The GPU path's plan, its kernels replayed in Java.
                    Communicator comm = simGroup.communicator(rank);
                    DispatchLayout layout = new DispatchLayout(placement, rank);
                    layout.compute(ids, TOKENS, TOP_K);
                    RoutePlan plan = new RoutePlan(placement, rank, TOP_K);
                    long[] sendRows = new long[n];
                    long[] recvRows = new long[n];
                    for (int r = 0; r < n; r++) {
                        sendRows[r] = layout.tokensPerRank(r);
                    }
                    comm.allToAllCounts(0, ExchangePhase.DISPATCH, sendRows, recvRows);
                    int numRecv = (int) sum(recvRows);
                    ByteBuffer routes =
                            ByteBuffer.allocateDirect(Math.max(1, numRecv * plan.routeRowBytes()))
                                    .order(ByteOrder.LITTLE_ENDIAN);
                    comm.allToAllV(
                            0,
                            ExchangePhase.DISPATCH,
                            (peer, dst, off) -> plan.writeRoutes(layout, peer, dst, off, weights),
                            scaled(sendRows, plan.routeRowBytes()),
                            routes,
                            scaled(recvRows, plan.routeRowBytes()));
                    int numGrouped = plan.group(routes, numRecv);

                    ByteBuffer send =
                            KernelReplays.gatherRows(
                                    tokens,
                                    plan.packOrder(layout),
                                    layout.rankOffsets(n),
                                    rowBytes);
                    ByteBuffer recv =
                            ByteBuffer.allocateDirect(Math.max(1, numRecv * rowBytes))
                                    .order(ByteOrder.LITTLE_ENDIAN);
                    comm.allToAllV(
                            0,
                            ExchangePhase.DISPATCH,
                            send,
                            scaled(sendRows, rowBytes),
                            recv,
                            scaled(recvRows, rowBytes));
                    assertThat(numRecv).isEqualTo(result.numRecvTokens());
                    assertThat(recv.slice(0, numRecv * rowBytes))
                            .as("rank %d received rows", rank)
                            .isEqualTo(cpuRecv.slice(0, numRecv * rowBytes));

                    // identity experts: their outputs are the grouped rows, as fp32
                    float[] expertOut =
                            dtype == DType.BF16
                                    ? KernelReplays.widen(
                                            KernelReplays.gatherRows(
                                                    recv,
                                                    plan.groupedOrder(),
                                                    numGrouped,
                                                    rowBytes),
                                            numGrouped * HIDDEN)
                                    : KernelReplays.widenRows(
                                            recv, plan.groupedOrder(), numGrouped, HIDDEN, dtype);
                    ByteBuffer combineSend =
                            KernelReplays.weightedSum(
                                    expertOut,
                                    plan.combineStart(),
                                    plan.combineRow(),
                                    plan.combineWeight(),
                                    numRecv,
                                    HIDDEN,
                                    dtype);
                    ByteBuffer combineRecv =
                            ByteBuffer.allocateDirect(Math.max(1, layout.rankOffsets(n) * rowBytes))
                                    .order(ByteOrder.LITTLE_ENDIAN);
                    comm.allToAllV(
                            1,
                            ExchangePhase.COMBINE,
                            combineSend,
                            scaled(recvRows, rowBytes),
                            combineRecv,
                            scaled(sendRows, rowBytes));
                    int[] returned = plan.returnedRows(layout);
                    float[] out =
                            KernelReplays.accumulate(
                                    combineRecv,
                                    plan.returnedStart(),
                                    returned,
                                    TOKENS,
                                    HIDDEN,
                                    dtype);
                    float[] expected = new float[out.length];
                    cpuOut.get(0, expected);
                    KernelReplays.assertSameBits(
                            "seed=" + seed + " rank=" + rank, out, expected, out.length);
                    return null;
                });
    }

    private static long[] scaled(long[] rows, int bytes) {
        long[] out = new long[rows.length];
        for (int i = 0; i < rows.length; i++) {
            out[i] = rows[i] * bytes;
        }
        return out;
    }

    private static long sum(long[] a) {
        long s = 0;
        for (long v : a) {
            s += v;
        }
        return s;
    }
}
