package moe.a2a.bench;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import moe.a2a.dispatch.DispatchResult;
import moe.a2a.dispatch.ExpertSums;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.Buffers;
import moe.a2a.experts.ExpertBank;
import moe.a2a.experts.SeededWeights;
import moe.a2a.workload.BenchWorkload;
import org.jspecify.annotations.Nullable;

/**
 * The dispatcher benchmark's expert stage ({@code bench --expert-ffn I}): this rank's experts of a
 * seeded model of the workload's shape with intermediate size {@code I}, run as a served step runs
 * them (SwiGLU per local slot on its rows, fp32), then each received token's weighted sum written
 * as its combine row. Owned by the rank thread.
 */
public final class BenchExperts implements ExpertStage {
    private final ExpertBank bank;
    private final ExpertSums sums = new ExpertSums();
    private final int hidden;
    private FloatBuffer outputs = Buffers.floats(0);

    /** Loads {@code rank}'s slots of {@code placement}: {@code 3 × hidden × ffn} floats each. */
    public BenchExperts(Placement placement, int rank, int hidden, int ffn, long seed) {
        this.hidden = hidden;
        this.bank =
                new ExpertBank(
                        new SeededWeights(seed, placement.numExperts(), hidden, ffn, 1),
                        placement,
                        rank);
    }

    /**
     * {@code rank}'s experts for workload {@code w} as the benchmark places it (with {@code
     * redundantExperts} extra slots), of intermediate size {@code ffn}; null for {@code ffn == 0},
     * a run without an expert stage.
     */
    public static @Nullable ExpertStage of(
            BenchWorkload w, int redundantExperts, int rank, int ffn) {
        return ffn == 0
                ? null
                : new BenchExperts(
                        BenchPlacement.of(w, redundantExperts), rank, w.hidden(), ffn, w.seed());
    }

    @Override
    public void run(DispatchResult result, ByteBuffer back) {
        outputs = Buffers.ensure(outputs, (long) result.numExpertRows() * hidden);
        bank.forward(0, result, outputs);
        sums.write(outputs, result.handle(), back);
    }
}
