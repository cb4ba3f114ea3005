package moe.a2a.control.cluster;

import java.util.List;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RoutingInput;

/** Cuts one rank's share of the step's routing out of the batched requests' routing. */
final class RoutingSlices {
    private RoutingSlices() {}

    /**
     * The routing of global rows {@code [from, from+count)}; every job in the batch has one kind.
     */
    static RoutingInput slice(List<ForwardJob> batch, int from, int count, ModelConfig model) {
        RoutingInput kind = batch.get(0).routing();
        if (kind instanceof RoutingInput.ModelGate) {
            return kind;
        }
        final int width = kind instanceof RoutingInput.TopK ? model.topK() : model.experts();
        int[] ids = kind instanceof RoutingInput.TopK ? new int[count * width] : null;
        float[] values = new float[count * width];
        int jobStart = 0;
        for (ForwardJob job : batch) {
            int jobEnd = jobStart + job.numTokens();
            int lo = Math.max(from, jobStart);
            int hi = Math.min(from + count, jobEnd);
            if (lo < hi) {
                int src = (lo - jobStart) * width;
                int dst = (lo - from) * width;
                int len = (hi - lo) * width;
                if (job.routing() instanceof RoutingInput.TopK topk) {
                    System.arraycopy(topk.ids(), src, ids, dst, len);
                    System.arraycopy(topk.weights(), src, values, dst, len);
                } else if (job.routing() instanceof RoutingInput.Logits logits) {
                    System.arraycopy(logits.logits(), src, values, dst, len);
                }
            }
            jobStart = jobEnd;
        }
        return ids != null ? new RoutingInput.TopK(ids, values) : new RoutingInput.Logits(values);
    }
}
