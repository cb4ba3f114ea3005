package moe.a2a.dispatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.RankThreads;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.comm.shm.ShmTestGroups;
import moe.a2a.kernels.DType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The hierarchical path against a plain reference and against the flat {@link Dispatcher}: values
 * are small multiples of 1/2 so that every sum is exact in bf16 and in any order, and the expert of
 * expert {@code e} multiplies by {@code scale(e)}, so every token's output is {@code Σ_k w_k ·
 * scale(e_k) · x} whatever replica or host computes it.
 */
@Timeout(60)
class HierarchicalDispatcherTest {
    private static final int HIDDEN = 24;
    private static final int TOP_K = 4;

    private final ShmTestGroups shm = new ShmTestGroups();

    @AfterEach
    void close() throws Exception {
        shm.closeAll();
    }

    @ParameterizedTest(name = "{0} hosts x {1} ranks ({5}), {2} experts, {4}, host group over {3}")
    @CsvSource({
        "2, 2, 16, local, BF16, contiguous",
        "2, 2, 16, local, BF16, interleaved",
        "3, 2, 12, local, FP32, contiguous",
        "2, 3, 18, shm, FP16, interleaved",
        "1, 3, 9, local, BF16, contiguous",
        "4, 1, 8, local, BF16, contiguous"
    })
    void shouldCombineAsTheReferenceAndTheFlatPathWhileSendingEachTokenOncePerHost(
            int hosts,
            int ranksPerHost,
            int experts,
            String hostTransport,
            DType dtype,
            String ranks)
            throws Exception {
        HostTopology topology = topology(hosts, ranksPerHost, ranks.equals("interleaved"));
        int n = topology.worldSize();
        SplittableRandom random = new SplittableRandom(hosts * 31L + ranksPerHost);
        Placement first = replicated(random, experts, n);
        // odd steps route by a placement of the same slots holding other experts, as after a move
        Placement moved = relabelled(random, first);
        Communicator[] flat = comms(new LocalGroup(n));
        Communicator[][] rails = new Communicator[ranksPerHost][];
        for (int l = 0; l < ranksPerHost; l++) {
            rails[l] = comms(new LocalGroup(hosts));
        }
        Communicator[][] hostGroups = new Communicator[hosts][];
        for (int g = 0; g < hosts; g++) {
            hostGroups[g] =
                    hostTransport.equals("shm")
                            ? shm.open(ranksPerHost, TimeUnit.SECONDS.toNanos(20))
                            : comms(new LocalGroup(ranksPerHost));
        }
        int steps = 3;
        Step[][] inputs = new Step[steps][n];
        for (int s = 0; s < steps; s++) {
            for (int r = 0; r < n; r++) {
                inputs[s][r] =
                        Step.random(random, r == 1 && s == 1 ? 0 : 1 + random.nextInt(40), experts);
            }
        }
        List<RankCounts> counts =
                RankThreads.run(
                        n,
                        rank -> {
                            HierarchicalDispatcher hier =
                                    new HierarchicalDispatcher(
                                            rails[topology.local(rank)][topology.host(rank)],
                                            hostGroups[topology.host(rank)][topology.local(rank)],
                                            topology,
                                            first,
                                            HIDDEN,
                                            TOP_K);
                            Dispatcher flatPath = new Dispatcher(flat[rank], first, HIDDEN, TOP_K);
                            RankCounts c = new RankCounts(n);
                            for (int s = 0; s < steps; s++) {
                                Step in = inputs[s][rank];
                                Placement placement = s % 2 == 0 ? first : moved;
                                hier.use(placement);
                                flatPath.use(placement);
                                float[] viaHosts =
                                        run(hier, in, placement, rank, dtype, c.hierRows);
                                float[] viaRanks =
                                        run(flatPath, in, placement, rank, dtype, c.flatRows);
                                float[] reference = in.reference();
                                for (int i = 0; i < reference.length; i++) {
                                    if (viaHosts[i] != reference[i]
                                            || viaRanks[i] != reference[i]) {
                                        throw new AssertionError(
                                                "step "
                                                        + s
                                                        + ", rank "
                                                        + rank
                                                        + ", element "
                                                        + i
                                                        + ": hierarchical "
                                                        + viaHosts[i]
                                                        + ", flat "
                                                        + viaRanks[i]
                                                        + ", reference "
                                                        + reference[i]);
                                    }
                                }
                                for (int r = 0; r < n; r++) {
                                    if (hier.layout().tokensPerRank(r)
                                            != flatPath.layout().tokensPerRank(r)) {
                                        throw new AssertionError(
                                                "step "
                                                        + s
                                                        + ", rank "
                                                        + rank
                                                        + ": routed to "
                                                        + r);
                                    }
                                }
                                c.expectedInterHost +=
                                        remoteHostVisits(in, placement, topology, rank)
                                                * (rowBytes(dtype)
                                                        + (long) HIDDEN * dtype.sizeBytes());
                            }
                            c.interHost = hier.interHostBytes();
                            return c;
                        });
        long sent = 0;
        long expected = 0;
        for (RankCounts c : counts) {
            sent += c.interHost;
            expected += c.expectedInterHost;
        }
        assertThat(sent).isEqualTo(expected);
        if (hosts == 1) {
            assertThat(sent).isZero();
        } else {
            assertThat(sent).isPositive();
        }
        for (int r = 0; r < n; r++) {
            for (int p = 0; p < n; p++) {
                String pair = "rows from rank " + r + " to rank " + p;
                assertThat(counts.get(r).flatRows[0][p])
                        .as("flat " + pair)
                        .isEqualTo(counts.get(p).flatRows[1][r]);
                assertThat(counts.get(r).hierRows[0][p])
                        .as("hierarchical " + pair)
                        .isEqualTo(counts.get(p).hierRows[1][r]);
                if (topology.host(r) != topology.host(p)
                        && topology.local(r) != topology.local(p)) {
                    assertThat(counts.get(r).hierRows[0][p])
                            .as("hierarchical " + pair + ": neither its host nor its rail")
                            .isZero();
                }
            }
        }
    }

    @Test
    void shouldRefuseCommunicatorsThatDoNotMatchTheTopology() {
        Placement placement = Placement.contiguous(8, 4);
        HostTopology topology = HostTopology.contiguous(2, 2);
        Communicator rail = new LocalGroup(3).communicator(0);
        Communicator hostGroup = new LocalGroup(2).communicator(0);
        assertThatThrownBy(
                        () ->
                                new HierarchicalDispatcher(
                                        rail, hostGroup, topology, placement, HIDDEN, TOP_K))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("rail.size: 3");
        assertThatThrownBy(() -> HostTopology.contiguous(0, 2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("hosts: 0");
        assertThatThrownBy(() -> HostTopology.of(new int[] {0, 1, 1}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("hostOf: [0, 1, 1]")
                .hasMessageContaining("host 1 has 2, host 0 has 1");
        assertThatThrownBy(() -> HostTopology.of(new int[] {0, 2}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("host 1 has 0");
        assertThatThrownBy(() -> topology.hostPlacement(Placement.contiguous(8, 2), 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("placement.worldSize: 2");
    }

    /**
     * One step through {@code path} with the scaling expert; the combined rows. Adds the rows it
     * counts to {@code rows} ({@code [sent to, received from]}).
     */
    private static float[] run(
            DispatchPath path, Step in, Placement placement, int rank, DType dtype, long[][] rows) {
        int size = dtype.sizeBytes();
        ByteBuffer tokens =
                ByteBuffer.allocateDirect(Math.max(1, in.numTokens * HIDDEN * size))
                        .order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < in.numTokens * HIDDEN; i++) {
            dtype.put(tokens, i * size, in.values[i]);
        }
        DispatchResult result = path.dispatch(tokens, in.numTokens, dtype, in.ids, in.weights);
        DispatchHandle handle = result.handle();
        path.countRows(handle, rows[0], rows[1]);
        int received = result.numRecvTokens();
        float[] sums = new float[received * HIDDEN];
        float[] rowValues = new float[HIDDEN];
        for (int slot = 0; slot < handle.localExperts(); slot++) {
            float scale = scale(placement.expertAt(rank, slot));
            for (int i = handle.expertOffsets(slot); i < handle.expertOffsets(slot + 1); i++) {
                int j = handle.expertRow(i);
                result.recvToken(j, rowValues, 0);
                for (int c = 0; c < HIDDEN; c++) {
                    sums[j * HIDDEN + c] += handle.expertWeight(i) * scale * rowValues[c];
                }
            }
        }
        dtype.encode(sums, 0, sums.length, path.combineRows(handle), 0);
        FloatBuffer out =
                ByteBuffer.allocateDirect(Math.max(1, in.numTokens * HIDDEN * Float.BYTES))
                        .order(ByteOrder.nativeOrder())
                        .asFloatBuffer();
        path.combine(handle, out);
        float[] combined = new float[in.numTokens * HIDDEN];
        out.get(0, combined);
        return combined;
    }

    /** 1 or 2: every partial sum stays a small multiple of 1/2. */
    private static float scale(int expert) {
        return 1 + expert % 2;
    }

    /** The tokens' (host, token) pairs with a chosen replica on another host than the source's. */
    private static long remoteHostVisits(
            Step in, Placement placement, HostTopology topology, int rank) {
        DispatchLayout layout = new DispatchLayout(placement, rank);
        layout.compute(in.ids, in.numTokens, TOP_K);
        long visits = 0;
        for (int t = 0; t < in.numTokens; t++) {
            boolean[] seen = new boolean[topology.hosts()];
            for (int k = 0; k < TOP_K; k++) {
                int r = layout.chosenRank(t * TOP_K + k);
                if (r >= 0 && topology.host(r) != topology.host(rank) && !seen[topology.host(r)]) {
                    seen[topology.host(r)] = true;
                    visits++;
                }
            }
        }
        return visits;
    }

    /**
     * A topology of {@code hosts × ranksPerHost}, consecutive ranks on each host or dealt round.
     */
    private static HostTopology topology(int hosts, int ranksPerHost, boolean interleaved) {
        if (!interleaved) {
            return HostTopology.contiguous(hosts, ranksPerHost);
        }
        int[] hostOf = new int[hosts * ranksPerHost];
        for (int r = 0; r < hostOf.length; r++) {
            hostOf[r] = r % hosts;
        }
        return HostTopology.of(hostOf);
    }

    /** {@code placement}'s slots with the experts renamed by a random permutation. */
    private static Placement relabelled(SplittableRandom random, Placement placement) {
        int experts = placement.numExperts();
        int[] rename = new int[experts];
        for (int e = 0; e < experts; e++) {
            rename[e] = e;
        }
        for (int e = experts - 1; e > 0; e--) {
            int j = random.nextInt(e + 1);
            int t = rename[e];
            rename[e] = rename[j];
            rename[j] = t;
        }
        int[][] rankExperts = new int[placement.worldSize()][];
        for (int r = 0; r < rankExperts.length; r++) {
            rankExperts[r] = new int[placement.localExperts(r)];
            for (int s = 0; s < rankExperts[r].length; s++) {
                rankExperts[r][s] = rename[placement.expertAt(r, s)];
            }
        }
        return Placement.of(placement.version() + 1, experts, rankExperts);
    }

    /** What one rank's steps sent: inter-host bytes, and rows per peer of each path. */
    private static final class RankCounts {
        final long[][] hierRows;
        final long[][] flatRows;
        long interHost;
        long expectedInterHost;

        RankCounts(int n) {
            hierRows = new long[2][n];
            flatRows = new long[2][n];
        }
    }

    private static int rowBytes(DType dtype) {
        return new DispatchRowLayout(HIDDEN, TOP_K, dtype, DispatchDType.BF16).rowBytes();
    }

    /** Every expert on one or two ranks, ranks holding different numbers of slots. */
    private static Placement replicated(SplittableRandom random, int experts, int n) {
        List<List<Integer>> slots = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            slots.add(new ArrayList<>());
        }
        for (int e = 0; e < experts; e++) {
            int home = e % n;
            slots.get(home).add(e);
            if (random.nextInt(3) == 0) {
                slots.get((home + 1 + random.nextInt(n - 1 == 0 ? 1 : n - 1)) % n).add(e);
            }
        }
        int[][] rankExperts = new int[n][];
        for (int r = 0; r < n; r++) {
            rankExperts[r] = slots.get(r).stream().mapToInt(Integer::intValue).toArray();
        }
        return Placement.of(Placement.FIRST_VERSION, experts, rankExperts);
    }

    private static Communicator[] comms(LocalGroup group) {
        Communicator[] c = new Communicator[group.size()];
        for (int r = 0; r < c.length; r++) {
            c[r] = group.communicator(r);
        }
        return c;
    }

    /**
     * One rank's tokens in a step: values in {-4, -3.5, ..., 4}, weights 1/2 or 1, distinct ids.
     */
    private record Step(int numTokens, float[] values, int[] ids, float[] weights) {
        static Step random(SplittableRandom random, int numTokens, int experts) {
            float[] values = new float[numTokens * HIDDEN];
            for (int i = 0; i < values.length; i++) {
                values[i] = (random.nextInt(17) - 8) / 2f;
            }
            float[] weights = new float[numTokens * TOP_K];
            for (int i = 0; i < weights.length; i++) {
                weights[i] = random.nextBoolean() ? 0.5f : 1f;
            }
            int[] ids = TestRoutings.uniform(random, numTokens, experts, TOP_K);
            for (int i = 0; i < ids.length; i++) {
                if (random.nextInt(10) == 0) {
                    ids[i] = CapacityFilter.DROPPED;
                }
            }
            return new Step(numTokens, values, ids, weights);
        }

        float[] reference() {
            float[] out = new float[numTokens * HIDDEN];
            for (int t = 0; t < numTokens; t++) {
                float factor = 0;
                for (int k = 0; k < TOP_K; k++) {
                    int e = ids[t * TOP_K + k];
                    factor += e == CapacityFilter.DROPPED ? 0 : weights[t * TOP_K + k] * scale(e);
                }
                for (int c = 0; c < HIDDEN; c++) {
                    out[t * HIDDEN + c] = factor * values[t * HIDDEN + c];
                }
            }
            return out;
        }
    }
}
