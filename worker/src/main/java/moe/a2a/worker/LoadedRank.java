package moe.a2a.worker;

import java.nio.file.Path;
import java.util.List;
import moe.a2a.comm.Transport;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankRuntime;
import moe.a2a.experts.SafetensorsWeights;
import moe.a2a.experts.SeededWeights;
import moe.a2a.experts.WeightSource;
import moe.a2a.experts.hf.HfCheckpoint;
import moe.a2a.metrics.StepListener;
import moe.a2a.protocol.PlacementCodec;
import moe.a2a.v1.ModelSpec;
import moe.a2a.v1.PlacementSpec;

/**
 * What a worker loaded for the rank the control plane gave it: the experts' runtime (which holds
 * each layer's placement) and the rank's meters, with the rank, model spec and data plane they were
 * built for. Kept across sessions, so a worker that rejoins with the same rank, model, placements
 * and data plane need not load again. Owned by the worker's data-plane thread.
 */
record LoadedRank(
        int rank,
        ModelSpec spec,
        Transport transport,
        ModelConfig model,
        RankRuntime runtime,
        StepListener metrics) {

    /**
     * Whether this is what the control plane asks for now, each layer's placement included (as the
     * runtime holds it now).
     */
    boolean serves(int rank, ModelSpec spec, List<PlacementSpec> placements, Transport transport) {
        if (this.rank != rank
                || !spec.equals(this.spec)
                || transport != this.transport
                || placements.size() != model.layers()) {
            return false;
        }
        for (int layer = 0; layer < placements.size(); layer++) {
            if (!PlacementCodec.encode(runtime.placement(layer)).equals(placements.get(layer))) {
                return false;
            }
        }
        return true;
    }

    /**
     * The spec's weights: its checkpoint directory, its safetensors file, or seeded ones when it
     * names neither.
     */
    static WeightSource weights(ModelSpec spec) {
        if (!spec.getModelDir().isEmpty()) {
            return HfCheckpoint.open(Path.of(spec.getModelDir()));
        }
        return spec.getWeightsPath().isEmpty()
                ? new SeededWeights(
                        spec.getSeed(),
                        spec.getExperts(),
                        spec.getHidden(),
                        spec.getFfn(),
                        spec.getLayers())
                : SafetensorsWeights.open(Path.of(spec.getWeightsPath()));
    }

    static ModelConfig model(ModelSpec spec) {
        return new ModelConfig(
                spec.getExperts(),
                spec.getHidden(),
                spec.getFfn(),
                spec.getTopK(),
                spec.getLayers(),
                spec.getDispatchDtype().isEmpty()
                        ? DispatchDType.BF16
                        : DispatchDType.parse("model.dispatch_dtype", spec.getDispatchDtype()),
                Math.max(1, spec.getMicroBatches()));
    }
}
