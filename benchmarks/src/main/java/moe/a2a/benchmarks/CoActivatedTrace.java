package moe.a2a.benchmarks;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import moe.a2a.protocol.RoutingTrace;

/**
 * Writes a routing trace whose experts are chosen together, the structure the canonical workloads
 * lack (they draw each expert independently): 256 experts in 32 sets of 8, each set scattered over
 * the ranks of the contiguous placement by a seeded permutation. A token picks a set by a Zipf law
 * (s = 1.2, so some sets are hot), then each of its 8 experts is, with probability {@code p}, an
 * unused member of its set, else any expert by the same Zipf law over all experts. 4 ranks, 2
 * steps of 1024 tokens per rank, seed 42.
 *
 * <p>{@code java -cp benchmarks/target/benchmarks.jar moe.a2a.benchmarks.CoActivatedTrace FILE
 * [P]} (P defaults to 0.7), after {@code ./mvnw -Pjmh package -pl benchmarks -am}.
 */
public final class CoActivatedTrace {
    static final int EXPERTS = 256;
    static final int SETS = 32;
    static final int TOP_K = 8;
    static final int RANKS = 4;
    static final int STEPS = 2;
    static final int TOKENS = 1024;

    private CoActivatedTrace() {}

    public static void main(String[] args) throws IOException {
        if (args.length < 1 || args.length > 2) {
            System.err.println("usage: CoActivatedTrace FILE [P]");
            System.exit(2);
        }
        double p = args.length == 2 ? Double.parseDouble(args[1]) : 0.7;
        SplittableRandom rnd = new SplittableRandom(42);
        int[] perm = new int[EXPERTS];
        for (int i = 0; i < EXPERTS; i++) {
            perm[i] = i;
        }
        for (int i = EXPERTS - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
        int size = EXPERTS / SETS;
        double[] setCdf = zipfCdf(SETS);
        double[] expertCdf = zipfCdf(EXPERTS);
        List<RoutingTrace.Step> steps = new ArrayList<>();
        for (int s = 0; s < STEPS; s++) {
            int[] perRank = new int[RANKS];
            int[] ids = new int[RANKS * TOKENS * TOP_K];
            for (int t = 0; t < RANKS * TOKENS; t++) {
                int set = draw(setCdf, rnd);
                for (int j = 0; j < TOP_K; j++) {
                    int e;
                    do {
                        e =
                                rnd.nextDouble() < p
                                        ? perm[set * size + rnd.nextInt(size)]
                                        : perm[draw(expertCdf, rnd)];
                    } while (chosen(ids, t * TOP_K, j, e));
                    ids[t * TOP_K + j] = e;
                }
            }
            Arrays.fill(perRank, TOKENS);
            steps.add(new RoutingTrace.Step(s, 0, perRank, ids));
        }
        Path file = Path.of(args[0]);
        new RoutingTrace(EXPERTS, TOP_K, RANKS, STEPS, 1, steps).write(file);
        System.out.println("wrote " + file);
    }

    private static double[] zipfCdf(int n) {
        double[] cdf = new double[n];
        double sum = 0;
        for (int i = 0; i < n; i++) {
            sum += Math.pow(i + 1, -1.2);
            cdf[i] = sum;
        }
        for (int i = 0; i < n; i++) {
            cdf[i] /= sum;
        }
        cdf[n - 1] = 1.0;
        return cdf;
    }

    private static int draw(double[] cdf, SplittableRandom rnd) {
        double u = rnd.nextDouble();
        int i = 0;
        while (!(cdf[i] > u)) {
            i++;
        }
        return i;
    }

    private static boolean chosen(int[] ids, int from, int count, int e) {
        for (int i = 0; i < count; i++) {
            if (ids[from + i] == e) {
                return true;
            }
        }
        return false;
    }
}
