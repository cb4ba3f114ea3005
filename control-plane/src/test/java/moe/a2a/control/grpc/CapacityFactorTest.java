package moe.a2a.control.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.control.cluster.EmbeddedCluster;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.protocol.TensorCodec;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import moe.a2a.v1.MoeServiceGrpc;
import moe.a2a.v1.TopK;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code --capacity-factor}: over capacity, each home rank drops its lowest-weight pairs of an
 * expert; answers are the reference's for the pairs kept, the other weights not renormalised.
 */
@Timeout(60)
class CapacityFactorTest {
    static final int E = 8;
    static final int H = 32;
    static final int I = 48;
    static final int K = 2;
    static final int N = 4;
    static final double CF = 1.0;

    final SeededWeights weights = new SeededWeights(23, E, H, I, 1);
    final ReferenceAnswers answers = new ReferenceAnswers(weights, K);
    InProcessMoeServer fixture;
    MoeServiceGrpc.MoeServiceBlockingStub stub;
    SimpleMeterRegistry registry;

    @BeforeEach
    void start() throws Exception {
        fixture =
                new InProcessMoeServer(
                        new EmbeddedCluster(
                                new ModelConfig(E, H, I, K, 1),
                                weights,
                                Placement.contiguous(E, N),
                                TimeUnit.SECONDS.toNanos(10)),
                        weights,
                        new MoeServer.Settings(256, 64, 1 << 20, 1 << 20, 2, 0, CF));
        stub = fixture.stub;
        registry = fixture.registry;
    }

    @AfterEach
    void stop() throws Exception {
        fixture.close();
    }

    @Test
    void shouldDropEachRanksLowestWeightPairsBeyondItsShareOfCapacity() throws Exception {
        long droppedSoFar = 0;
        for (int tokens : new int[] {40, 37, 3}) {
            ForwardRequest request = skewed(new SplittableRandom(tokens), tokens);
            int[] ids = new int[tokens * K];
            float[] w = new float[tokens * K];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = request.getTopk().getExpertIds(i);
                w[i] = request.getTopk().getWeights(i);
            }
            long[] dropped = new long[E];
            long[] kept = new long[E];
            float[] keptWeights = bruteForce(ids, w, tokens, dropped, kept);

            ForwardResponse response = stub.forward(request);

            String where = "T=" + tokens;
            answers.assertMatches(where, request, response, ids, keptWeights);
            assertThat(response.getStats().getCapacityDroppedPerExpertList())
                    .as(where)
                    .containsExactlyElementsOf(boxed(dropped));
            assertThat(response.getStats().getTokensPerExpertList())
                    .as(where)
                    .containsExactlyElementsOf(boxed(kept));
            for (long d : dropped) {
                droppedSoFar += d;
            }
        }
        assertThat(droppedSoFar).as("the skew puts experts over capacity").isPositive();
        // the scheduler records a step's meters just after it answers: wait for the last one
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (countedDrops() != droppedSoFar && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(countedDrops()).isEqualTo(droppedSoFar);
    }

    private double countedDrops() {
        double counted = 0;
        for (int e = 0; e < E; e++) {
            counted +=
                    registry.get("moe.a2a.capacity.dropped")
                            .tag("layer", "0")
                            .tag("expert", Integer.toString(e))
                            .counter()
                            .count();
        }
        return counted;
    }

    /**
     * The weights with dropped pairs set to 0: the step's tokens split evenly over the ranks,
     * capacity {@code ceil(CF·T·K/E)} apportioned by their tokens, and each rank keeping, per
     * expert, its highest-weight pairs (the earlier token on ties).
     */
    private static float[] bruteForce(
            int[] ids, float[] w, int tokens, long[] dropped, long[] kept) {
        float[] out = w.clone();
        long capacity = (long) Math.ceil(CF * tokens * K / E);
        for (int r = 0; r < N; r++) {
            int from = r * tokens / N;
            int to = (r + 1) * tokens / N;
            long share = capacity * to / tokens - capacity * from / tokens;
            for (int e = 0; e < E; e++) {
                List<Integer> pairs = new ArrayList<>();
                for (int i = from * K; i < to * K; i++) {
                    if (ids[i] == e) {
                        pairs.add(i);
                    }
                }
                pairs.sort(Comparator.comparingDouble((Integer i) -> -w[i]));
                for (int j = 0; j < pairs.size(); j++) {
                    if (j < share) {
                        kept[e]++;
                    } else {
                        out[pairs.get(j)] = 0;
                        dropped[e]++;
                    }
                }
            }
        }
        return out;
    }

    private static List<Long> boxed(long[] values) {
        List<Long> out = new ArrayList<>();
        for (long v : values) {
            out.add(v);
        }
        return out;
    }

    /** Half the tokens' first expert is 0; weights in eighths, so ties happen. */
    private static ForwardRequest skewed(SplittableRandom random, int tokens) {
        ByteBuffer data = ByteBuffer.allocate(tokens * H * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < tokens * H; i++) {
            data.putFloat(i * 4, (float) random.nextGaussian());
        }
        TopK.Builder topk = TopK.newBuilder().setK(K);
        for (int t = 0; t < tokens; t++) {
            int a = random.nextBoolean() ? 0 : random.nextInt(E);
            int b = (a + 1 + random.nextInt(E - 1)) % E;
            float wa = (1 + random.nextInt(7)) / 8f;
            topk.addExpertIds(a).addExpertIds(b).addWeights(wa).addWeights(1 - wa);
        }
        return ForwardRequest.newBuilder()
                .setHiddenStates(
                        TensorCodec.tensor(
                                DType.FP32, tokens, H, ByteString.copyFrom(data.array())))
                .setTopk(topk)
                .build();
    }
}
