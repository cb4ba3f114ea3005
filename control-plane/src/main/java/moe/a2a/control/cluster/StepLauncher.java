package moe.a2a.control.cluster;

import com.google.protobuf.ByteString;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import moe.a2a.dispatch.CapacityFilter;
import moe.a2a.experts.RoutingInput;
import moe.a2a.kernels.DType;

/**
 * Cuts a batch into the ranks' shares and submits it as one step. The step's tokens are split
 * evenly across the serving ranks as their home ranks, so they really cross ranks; a rank the
 * cluster serves without gets none. Owned by the scheduler thread.
 */
final class StepLauncher {
    private final RankGroup cluster;
    private final double capacityFactor;
    private final StepModes modes;
    private long nextStepId;

    StepLauncher(RankGroup cluster, double capacityFactor, StepModes modes) {
        this.cluster = cluster;
        this.capacityFactor = capacityFactor;
        this.modes = modes;
    }

    /**
     * Cuts the batch into the ranks' shares and starts the step, in the mode {@link StepModes}
     * picks; the next one may start before it ends.
     *
     * @throws moe.a2a.protocol.InvalidRequestException when {@code --mode low-latency} cannot run
     *     the step
     */
    StepInFlight launch(List<ForwardJob> batch) {
        final long stepId = nextStepId++;
        final long startNanos = System.nanoTime();
        final ForwardJob first = batch.get(0);
        final DType dtype = first.dtype();
        final int rowBytes = cluster.model().hidden() * dtype.sizeBytes();
        final int n = cluster.worldSize();
        int total = 0;
        for (ForwardJob job : batch) {
            total += job.numTokens();
        }
        // home ranks share the tokens evenly; a rank the cluster serves without gets none
        int[] serving = cluster.servingRanks();
        int[] rankStart = new int[n + 1];
        int before = 0;
        for (int r = 0; r < n; r++) {
            rankStart[r] = (int) ((long) before * total / serving.length);
            if (before < serving.length && serving[before] == r) {
                before++;
            }
        }
        rankStart[n] = total;
        int[] counts = new int[n];
        ByteBuffer[] tokens = new ByteBuffer[n];
        RoutingInput[] routing = new RoutingInput[n];
        for (int r = 0; r < n; r++) {
            counts[r] = rankStart[r + 1] - rankStart[r];
            tokens[r] = fill(batch, rankStart[r], counts[r], rowBytes);
            routing[r] = RoutingSlices.slice(batch, rankStart[r], counts[r], cluster.model());
        }
        int[] capacities = capacities(rankStart, total);
        int lowLatencyTokens = modes.lowLatencyTokens(counts, cluster.hosts() > 0);
        return new StepInFlight(
                stepId,
                batch,
                rankStart,
                rowBytes,
                cluster.placements().get(first.layer()).version(),
                startNanos,
                lowLatencyTokens > 0,
                cluster.submit(
                        first.layer(),
                        dtype,
                        tokens,
                        counts,
                        routing,
                        capacities,
                        lowLatencyTokens));
    }

    /**
     * Each rank's share of every expert's capacity this step: {@code ceil(CF · T · K / E)} pairs
     * split in proportion to the ranks' tokens, so that the shares add up to it exactly; unlimited
     * when the factor is 0 (dropless).
     */
    private int[] capacities(int[] rankStart, int total) {
        int n = rankStart.length - 1;
        long capacity =
                CapacityFilter.stepCapacity(
                        capacityFactor, total, cluster.model().topK(), cluster.model().experts());
        int[] out = new int[n];
        for (int r = 0; r < n; r++) {
            out[r] = CapacityFilter.share(capacity, rankStart[r], rankStart[r + 1], total);
        }
        return out;
    }

    /** Global rows {@code [from, from+count)} of the batch, as a rank's input buffer of its own. */
    private static ByteBuffer fill(List<ForwardJob> batch, int from, int count, int rowBytes) {
        ByteBuffer out = ByteBuffer.allocate(count * rowBytes).order(ByteOrder.LITTLE_ENDIAN);
        int jobStart = 0;
        int written = 0;
        for (ForwardJob job : batch) {
            int jobEnd = jobStart + job.numTokens();
            int lo = Math.max(from, jobStart);
            int hi = Math.min(from + count, jobEnd);
            if (lo < hi) {
                ByteString part =
                        job.tokens()
                                .substring((lo - jobStart) * rowBytes, (hi - jobStart) * rowBytes);
                part.copyTo(out.clear().position(written * rowBytes));
                written += hi - lo;
            }
            jobStart = jobEnd;
        }
        return out.clear();
    }
}
