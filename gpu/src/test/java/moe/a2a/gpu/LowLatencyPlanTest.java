package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.IntToDoubleFunction;
import java.util.stream.IntStream;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.RankThreads;
import moe.a2a.comm.SparseCommunicator;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.comm.nccl.FakeNcclGroup;
import moe.a2a.dispatch.CapacityFilter;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.DispatchResult;
import moe.a2a.dispatch.Dispatcher;
import moe.a2a.dispatch.Placement;
import moe.a2a.kernels.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The GPU low-latency step checked without a GPU: {@link LowLatencyPlan}'s staging and lists, and
 * the kernels ({@code gather_rows}, {@code ll_group}, the combine's sums) replayed in Java over an
 * in-process group exchanging the same fixed-size regions as NCCL would. With identity experts the
 * output must be the CPU {@link Dispatcher}'s bit for bit, for tokens in every dtype (fp16 and fp32
 * rows widened to fp32 by the grouping), and the counts each rank reads from the headers the rows
 * it really got. An odd hidden size leaves the headers off 4-byte alignment, as the kernel allows.
 */
class LowLatencyPlanTest {
    /** The hidden size of the refusal's plan; the replays take theirs as a parameter. */
    private static final int HIDDEN = 24;

    private static final int EXPERTS = 12;
    private static final int TOP_K = 3;

    /**
     * With {@code lost} >= 0, a sparse group serving without that rank (every expert has a replica
     * elsewhere): the regions stay laid out for the world, the members exchange theirs at {@link
     * DeviceGroup}'s offsets, and the lost rank's region reads as empty, as the zeroed one does on
     * the device.
     */
    @ParameterizedTest
    @CsvSource({
        "1, 8, -1, false, BF16, 24",
        "3, 16, -1, false, BF16, 24",
        "4, 5, -1, false, BF16, 24",
        "4, 1, -1, false, BF16, 24",
        "3, 16, -1, true, BF16, 24",
        "3, 16, -1, false, FP16, 24",
        "4, 5, -1, true, FP16, 24",
        "3, 16, -1, false, FP32, 24",
        "4, 1, -1, true, FP32, 24",
        "3, 16, 1, false, BF16, 24",
        "4, 5, 0, true, FP16, 24",
        "3, 4, 2, false, FP32, 24",
        "3, 5, -1, false, BF16, 23",
        "4, 3, -1, true, FP16, 23",
        "3, 5, 1, false, BF16, 23"
    })
    void shouldReproduceCpuDispatchAndCombineBitForBit(
            int n, int bound, int lost, boolean drops, DType dtype, int hidden) throws Exception {
        long seed = 300 + n * 7L + bound + 100L * dtype.ordinal() + 1000L * (lost + 1);
        int[] members = IntStream.range(0, n).filter(r -> r != lost).toArray();
        boolean[] lostRanks = new boolean[n];
        if (lost >= 0) {
            lostRanks[lost] = true;
        }
        Placement placement = lost < 0 ? withReplica(n) : twoReplicas(n).without(lostRanks, 2);
        LocalGroup cpuGroup = new LocalGroup(members.length);
        Communicator[] simGroup =
                lost < 0
                        ? local(n)
                        : FakeNcclGroup.group(members.length, TimeUnit.SECONDS.toNanos(30));
        RankThreads.run(
                members.length,
                member -> {
                    int rank = members[member];
                    SplittableRandom random = new SplittableRandom(seed * 31 + rank);
                    // one rank sends nothing, the others fewer than the bound or all of it
                    int tokens = rank == 1 ? 0 : bound - random.nextInt(Math.min(bound, 3));
                    int rowBytes = hidden * dtype.sizeBytes();
                    ByteBuffer input =
                            tokens(random, tokens, hidden, dtype, i -> random.nextDouble(-2, 2));
                    int[] ids = new int[tokens * TOP_K];
                    float[] weights = new float[tokens * TOP_K];
                    route(random, ids, weights);

                    if (drops) {
                        // as under an expert capacity: the first token loses every pair
                        for (int i = 0; i < ids.length; i++) {
                            if (i < TOP_K || i % 4 == 2) {
                                ids[i] = CapacityFilter.DROPPED;
                            }
                        }
                    }
                    Communicator cpuComm = cpuGroup.communicator(member);
                    Dispatcher cpu =
                            new Dispatcher(
                                    lost < 0
                                            ? cpuComm
                                            : new SparseCommunicator(cpuComm, members, n),
                                    placement,
                                    hidden,
                                    TOP_K);
                    DispatchResult result = cpu.dispatch(input, tokens, dtype, ids, weights);
                    float[] cpuOut = identityCombine(cpu, result, tokens, hidden, DType.FP32);

                    RegionExchange comm =
                            lost < 0
                                    ? (step, phase, send, bytes) ->
                                            exchange(simGroup[rank], step, phase, send, bytes)
                                    : sparse(simGroup[member], members, n);
                    LowLatencyPlan plan =
                            new LowLatencyPlan(placement, rank, TOP_K, bound, rowBytes);
                    int regionRows = plan.regionRows();
                    int rows = n * bound;
                    int slots = placement.localExperts(rank);
                    ByteBuffer staged =
                            ByteBuffer.allocateDirect(plan.stagedRows() * rowBytes)
                                    .order(ByteOrder.LITTLE_ENDIAN);
                    plan.plan(staged, tokens, ids, weights);
                    staged.put(0, input, 0, tokens * rowBytes);
                    ByteBuffer send =
                            KernelReplays.gatherRows(
                                    staged, plan.packOrder(), n * regionRows, rowBytes);
                    ByteBuffer recv =
                            comm.run(0, ExchangePhase.DISPATCH, send, (long) regionRows * rowBytes);

                    KernelReplays.Grouping g =
                            KernelReplays.llGroup(
                                    recv, regionRows, rowBytes, n, bound, TOP_K, slots);
                    for (int s = 0; s < n; s++) {
                        assertThat((long) g.received()[s])
                                .as("rank %d's count from %d", rank, s)
                                .isEqualTo(result.handle().recvRowsFrom(s));
                    }
                    // identity experts: their outputs are the grouped rows, as fp32
                    float[] expertOut =
                            dtype == DType.BF16
                                    ? KernelReplays.widen(
                                            KernelReplays.gatherRows(
                                                    recv, g.groupIndex(), slots * rows, rowBytes),
                                            slots * rows * hidden)
                                    : KernelReplays.widenRows(
                                            recv, g.groupIndex(), slots * rows, hidden, dtype);
                    float[] out = combine(comm, plan, g, expertOut, rows, hidden, dtype);
                    KernelReplays.assertSameBits(
                            "seed=" + seed + " rank=" + rank, out, cpuOut, tokens * hidden);
                    for (int i = tokens * hidden; i < out.length; i++) {
                        assertThat(out[i]).as("rows past the step's tokens").isZero();
                    }
                    return null;
                });
    }

    @Test
    void shouldRefuseAStepOverTheBoundNamingIt() {
        LowLatencyPlan plan =
                new LowLatencyPlan(Placement.contiguous(EXPERTS, 2), 0, TOP_K, 4, HIDDEN * 2);
        ByteBuffer staged = ByteBuffer.allocate(plan.stagedRows() * HIDDEN * 2);
        assertThatThrownBy(() -> plan.plan(staged, 5, new int[5 * TOP_K], new float[5 * TOP_K]))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("numTokens: 5 (expected: 0..4, the bound)");
    }

    /**
     * FP8 dispatch: the pack copies the headers and quantizes each region's token slots, the
     * grouping dequantizes to the experts' dtype (bf16 for bf16 tokens, so the CPU side's identity
     * experts round to bf16 too), and the rest is as above.
     */
    @ParameterizedTest
    @CsvSource({"3, 16, BF16, 24", "4, 5, FP16, 24", "1, 8, FP32, 24", "3, 5, BF16, 23"})
    void shouldReproduceCpuFp8DispatchAndCombineBitForBit(int n, int bound, DType dtype, int hidden)
            throws Exception {
        long seed = 700 + n * 7L + bound + 100L * dtype.ordinal();
        Placement placement = withReplica(n);
        LocalGroup cpuGroup = new LocalGroup(n);
        LocalGroup simGroup = new LocalGroup(n);
        RankThreads.run(
                n,
                rank -> {
                    SplittableRandom random = new SplittableRandom(seed * 31 + rank);
                    int tokens = rank == 1 ? 0 : bound - random.nextInt(Math.min(bound, 3));
                    int rowBytes = hidden * dtype.sizeBytes();
                    // magnitudes over 6 binades: the block scales differ within a row
                    ByteBuffer input =
                            tokens(
                                    random,
                                    tokens,
                                    hidden,
                                    dtype,
                                    i -> random.nextGaussian() * Math.pow(2, i % 7 - 3));
                    int[] ids = new int[tokens * TOP_K];
                    float[] weights = new float[tokens * TOP_K];
                    route(random, ids, weights);
                    Dispatcher cpu =
                            new Dispatcher(
                                    cpuGroup.communicator(rank),
                                    placement,
                                    hidden,
                                    TOP_K,
                                    DispatchDType.FP8);
                    DispatchResult result = cpu.dispatch(input, tokens, dtype, ids, weights);
                    DType experts = GpuDispatcher.expertDType(dtype);
                    float[] cpuOut = identityCombine(cpu, result, tokens, hidden, experts);

                    Communicator local = simGroup.communicator(rank);
                    RegionExchange comm =
                            (step, phase, send, bytes) -> exchange(local, step, phase, send, bytes);
                    int regionRowBytes =
                            GpuLowLatencyDispatcher.regionRowBytes(
                                    hidden, dtype, DispatchDType.FP8);
                    LowLatencyPlan plan =
                            new LowLatencyPlan(placement, rank, TOP_K, bound, regionRowBytes);
                    int regionRows = plan.regionRows();
                    int rows = n * bound;
                    int slots = placement.localExperts(rank);
                    ByteBuffer headers =
                            ByteBuffer.allocateDirect(plan.stagedRows() * regionRowBytes)
                                    .order(ByteOrder.LITTLE_ENDIAN);
                    plan.plan(headers, tokens, ids, weights);
                    // the tokens staged apart, T rows (those past the step's left as they were)
                    ByteBuffer stagedTokens =
                            ByteBuffer.allocateDirect(bound * rowBytes)
                                    .order(ByteOrder.LITTLE_ENDIAN);
                    stagedTokens.put(0, input, 0, tokens * rowBytes);
                    ByteBuffer send =
                            KernelReplays.gatherRows(
                                    headers, plan.packOrder(), n * regionRows, regionRowBytes);
                    for (int d = 0; d < n; d++) {
                        int[] slotsOfRegion =
                                Arrays.copyOfRange(
                                        plan.packOrder(), d * regionRows, d * regionRows + bound);
                        ByteBuffer quantized =
                                KernelReplays.quantizeFp8Rows(
                                        stagedTokens, slotsOfRegion, bound, hidden, dtype);
                        send.put(
                                d * regionRows * regionRowBytes,
                                quantized,
                                0,
                                bound * regionRowBytes);
                    }
                    ByteBuffer recv =
                            comm.run(
                                    0,
                                    ExchangePhase.DISPATCH,
                                    send,
                                    (long) regionRows * regionRowBytes);
                    KernelReplays.Grouping g =
                            KernelReplays.llGroup(
                                    recv, regionRows, regionRowBytes, n, bound, TOP_K, slots);
                    ByteBuffer grouped =
                            KernelReplays.dequantizeFp8Rows(
                                    recv, g.groupIndex(), slots * rows, hidden, experts);
                    float[] expertOut =
                            KernelReplays.widenRows(grouped, null, slots * rows, hidden, experts);
                    float[] out = combine(comm, plan, g, expertOut, rows, hidden, dtype);
                    KernelReplays.assertSameBits(
                            "seed=" + seed + " rank=" + rank, out, cpuOut, tokens * hidden);
                    return null;
                });
    }

    /** {@code count} seeded token rows in {@code dtype}, of {@code value(i)} for element i. */
    private static ByteBuffer tokens(
            SplittableRandom random,
            int count,
            int hidden,
            DType dtype,
            IntToDoubleFunction value) {
        ByteBuffer input =
                ByteBuffer.allocateDirect(Math.max(1, count * hidden * dtype.sizeBytes()))
                        .order(ByteOrder.LITTLE_ENDIAN);
        float[] values = new float[count * hidden];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) value.applyAsDouble(i);
        }
        dtype.encode(values, 0, values.length, input, 0);
        return input;
    }

    /** Seeded top-k routing to distinct experts into {@code ids} and {@code weights}. */
    private static void route(SplittableRandom random, int[] ids, float[] weights) {
        for (int t = 0; t < ids.length / TOP_K; t++) {
            int[] chosen = random.ints(0, EXPERTS).distinct().limit(TOP_K).toArray();
            for (int k = 0; k < TOP_K; k++) {
                ids[t * TOP_K + k] = chosen[k];
                weights[t * TOP_K + k] = (float) random.nextDouble(0.05, 1);
            }
        }
    }

    /**
     * The combine replayed on the experts' outputs: the weighted sums in {@code dtype}, the second
     * exchange of fixed regions, the sums at the source; every staged token's output row.
     */
    private static float[] combine(
            RegionExchange comm,
            LowLatencyPlan plan,
            KernelReplays.Grouping g,
            float[] expertOut,
            int rows,
            int hidden,
            DType dtype) {
        ByteBuffer combineSend =
                KernelReplays.weightedSum(
                        expertOut, g.start(), g.entryRow(), g.entryWeight(), rows, hidden, dtype);
        int bound = plan.bound();
        ByteBuffer combineRecv =
                comm.run(
                        1,
                        ExchangePhase.COMBINE,
                        combineSend,
                        (long) bound * hidden * dtype.sizeBytes());
        return KernelReplays.accumulate(
                combineRecv, plan.returnedStart(), plan.returnedRows(), bound, hidden, dtype);
    }

    /**
     * Contiguous experts, and with two ranks or more a second replica of expert 0 on the last one,
     * so that a token's choices spread over more ranks.
     */
    private static Placement withReplica(int n) {
        if (n == 1) {
            return Placement.contiguous(EXPERTS, 1);
        }
        int[][] rankExperts = new int[n][];
        for (int r = 0; r < n; r++) {
            rankExperts[r] = IntStream.range(r * EXPERTS / n, (r + 1) * EXPERTS / n).toArray();
        }
        rankExperts[n - 1] =
                IntStream.concat(IntStream.of(rankExperts[n - 1]), IntStream.of(0)).toArray();
        return Placement.of(1, EXPERTS, rankExperts);
    }

    /**
     * Each rank's contiguous experts and the next rank's: a replica of each outside any one rank.
     */
    private static Placement twoReplicas(int n) {
        int[][] rankExperts = new int[n][];
        for (int r = 0; r < n; r++) {
            int next = (r + 1) % n;
            rankExperts[r] =
                    IntStream.concat(
                                    IntStream.range(r * EXPERTS / n, (r + 1) * EXPERTS / n),
                                    IntStream.range(next * EXPERTS / n, (next + 1) * EXPERTS / n))
                            .toArray();
        }
        return Placement.of(1, EXPERTS, rankExperts);
    }

    /**
     * The CPU path's combine with identity experts, whose outputs are their inputs rounded to
     * {@code experts}' dtype: each token's weighted sum of its own row.
     */
    private static float[] identityCombine(
            Dispatcher cpu, DispatchResult result, int tokens, int hidden, DType experts) {
        FloatBuffer identity = FloatBuffer.allocate(Math.max(1, result.numExpertRows() * hidden));
        int at = 0;
        for (int slot = 0; slot < result.handle().localExperts(); slot++) {
            result.gather(slot, identity, at * hidden);
            at += result.handle().recvTokensPerLocalExpert(slot);
        }
        for (int i = 0; i < at * hidden; i++) {
            identity.put(i, experts.round(identity.get(i)));
        }
        FloatBuffer out =
                ByteBuffer.allocateDirect(Math.max(1, tokens * hidden * Float.BYTES))
                        .order(ByteOrder.nativeOrder())
                        .asFloatBuffer();
        cpu.combine(identity, result.handle(), out);
        float[] values = new float[tokens * hidden];
        out.get(0, values);
        return values;
    }

    private static Communicator[] local(int n) {
        LocalGroup group = new LocalGroup(n);
        return IntStream.range(0, n).mapToObj(group::communicator).toArray(Communicator[]::new);
    }

    /** A fixed-size all-to-all of buffers laid out for every world rank, {@code bytes} a rank. */
    @FunctionalInterface
    private interface RegionExchange {
        ByteBuffer run(long step, ExchangePhase phase, ByteBuffer send, long bytes);
    }

    /**
     * The members' exchange over the simulated NCCL as {@link DeviceGroup} runs it: each member's
     * segment taken from and put at its offset in the world's layout; the lost ranks' segments of
     * the received buffer stay zero.
     */
    private static RegionExchange sparse(Communicator nccl, int[] members, int worldSize) {
        DeviceGroup group = DeviceGroup.of(new SparseCommunicator(nccl, members, worldSize));
        return (step, phase, send, bytes) -> {
            long[] offsets = group.offsets(bytes);
            int m = members.length;
            ByteBuffer memberSend =
                    ByteBuffer.allocateDirect((int) Math.max(1, m * bytes))
                            .order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < m; i++) {
                memberSend.put((int) (i * bytes), send, (int) offsets[i], (int) bytes);
            }
            ByteBuffer memberRecv = exchange(nccl, step, phase, memberSend, bytes);
            ByteBuffer recv =
                    ByteBuffer.allocateDirect((int) Math.max(1, worldSize * bytes))
                            .order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < m; i++) {
                recv.put((int) offsets[i], memberRecv, (int) (i * bytes), (int) bytes);
            }
            return recv;
        };
    }

    /** The fixed-size all-to-all NCCL runs: {@code bytes} to and from every rank. */
    private static ByteBuffer exchange(
            Communicator comm, long step, ExchangePhase phase, ByteBuffer send, long bytes) {
        int n = comm.size();
        long[] counts = new long[n];
        Arrays.fill(counts, bytes);
        ByteBuffer recv =
                ByteBuffer.allocateDirect((int) Math.max(1, n * bytes))
                        .order(ByteOrder.LITTLE_ENDIAN);
        comm.allToAllV(step, phase, send, counts, recv, counts.clone());
        return recv;
    }
}
