package moe.a2a.worker;

import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.Transport;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.CpuRankRuntime;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankRuntime;
import moe.a2a.experts.WeightMemory;
import moe.a2a.experts.WeightSource;
import moe.a2a.gpu.GpuRankOptions;
import moe.a2a.gpu.GpuRankRuntime;
import moe.a2a.gpu.OutOfDeviceMemoryException;
import moe.a2a.metrics.StepMetrics;
import moe.a2a.metrics.WeightMemoryMetrics;
import moe.a2a.protocol.PlacementCodec;
import moe.a2a.v1.Accepted;
import moe.a2a.v1.ModelSpec;
import moe.a2a.v1.PlacementSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The rank the control plane gave this worker, the world it belongs to, and what was loaded for it:
 * on each Accepted it takes the rank and loads the experts again unless what it holds already
 * serves. Owned by the worker's data-plane thread; the rank is volatile because the session thread
 * asks for it again when it rejoins.
 */
final class RankAssignment {
    private static final Logger LOG = LoggerFactory.getLogger(RankAssignment.class);

    private final OfferedDataPlanes planes;

    /** Whether a GPU rank's fp32 GEMMs may run on TF32 tensor cores. */
    private final GpuRankOptions gpu;

    private final MeterRegistry registry;
    private volatile int rank = -1;
    private int worldSize;

    /**
     * Null until the first Accepted, and after {@link #closeRuntime}; volatile for the scrapes of
     * its weights' memory.
     */
    private volatile LoadedRank loaded;

    RankAssignment(OfferedDataPlanes planes, GpuRankOptions gpu, MeterRegistry registry) {
        this.planes = planes;
        this.gpu = gpu;
        this.registry = registry;
        new WeightMemoryMetrics(new LoadedWeights()).bindTo(registry);
    }

    /** The loaded rank's weights' memory, or none. */
    private final class LoadedWeights implements WeightMemoryMetrics.Source {
        private WeightMemory now() {
            LoadedRank l = loaded;
            return l == null ? WeightMemory.NONE : l.runtime().weightMemory();
        }

        @Override
        public long deviceBytesPerExpert() {
            return now().deviceBytesPerExpert();
        }

        @Override
        public long hostBytesPerExpert() {
            return now().hostBytesPerExpert();
        }

        @Override
        public long localExperts() {
            return now().localExperts();
        }
    }

    /** The rank given, or -1 before the control plane first accepted this worker. */
    int rank() {
        return rank;
    }

    int worldSize() {
        return worldSize;
    }

    LoadedRank loaded() {
        return loaded;
    }

    /**
     * Takes the data plane, rank and world size of {@code accepted}; returns the data plane's
     * transport, for {@link #load}.
     */
    Transport assign(Accepted accepted) {
        Transport transport = planes.accept(accepted.getTransport());
        rank = accepted.getRank();
        worldSize = accepted.getWorldSize();
        return transport;
    }

    /**
     * Loads the rank's experts for {@code accepted}'s model and placements on {@code transport},
     * unless what is loaded already serves them (a worker that rejoined).
     */
    void load(Accepted accepted, Transport transport) {
        ModelSpec spec = accepted.getModel();
        if (loaded != null && loaded.serves(rank, spec, accepted.getPlacementsList(), transport)) {
            LOG.info("rejoined as rank {} of {}", rank, worldSize);
            return;
        }
        long start = System.nanoTime();
        WeightSource weights = LoadedRank.weights(spec);
        ModelConfig model = LoadedRank.model(spec);
        closeRuntime();
        if (accepted.getPlacementsCount() != model.layers()) {
            throw new IllegalArgumentException(
                    "accepted.placements: "
                            + accepted.getPlacementsCount()
                            + " (expected: "
                            + model.layers()
                            + ", one per layer)");
        }
        List<Placement> placements = new ArrayList<>();
        for (PlacementSpec p : accepted.getPlacementsList()) {
            placements.add(PlacementCodec.decode(p, model.experts(), worldSize));
        }
        RankRuntime runtime = runtime(model, weights, placements.get(0), planes.current().device());
        // A layer the coordinator has rebalanced since the start differs from layer 0's placement.
        for (int layer = 1; layer < placements.size(); layer++) {
            if (!placements.get(layer).sameSlots(placements.get(0))
                    || placements.get(layer).version() != placements.get(0).version()) {
                runtime.install(runtime.stage(layer, placements.get(layer)));
            }
        }
        loaded =
                new LoadedRank(
                        rank,
                        spec,
                        transport,
                        model,
                        runtime,
                        new StepMetrics(
                                registry,
                                weights.layerNumbers(),
                                model.experts(),
                                worldSize,
                                transport));
        LOG.info(
                "joined as rank {} of {}: loaded experts {} of {} (placement version {}) in {} ms",
                rank,
                worldSize,
                Arrays.toString(placements.get(0).expertsOf(rank)),
                weights.description(),
                placements.get(0).version(),
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
    }

    /**
     * The runtime of this rank: on {@code device} when its data plane keeps rows there, else on the
     * host.
     */
    private RankRuntime runtime(
            ModelConfig model, WeightSource weights, Placement placement, int device) {
        if (device >= 0) {
            try {
                return new GpuRankRuntime(model, weights, placement, rank, device, gpu);
            } catch (OutOfDeviceMemoryException e) {
                LOG.warn(
                        "rank {}: GPU {} has no room for its experts ({}): the rank runs on the"
                                + " host path over NCCL, its weights in fp32 on the host",
                        rank,
                        device,
                        e.getMessage());
            }
        }
        return new CpuRankRuntime(model, weights, placement, rank);
    }

    /**
     * Frees what the rank's runtime holds outside the heap (device memory on a GPU), and forgets
     * what was loaded.
     */
    void closeRuntime() {
        if (loaded != null && loaded.runtime() instanceof AutoCloseable closeable) {
            try {
                closeable.close();
            } catch (Exception e) {
                LOG.warn("closing the rank runtime: {}", e.toString());
            }
        }
        loaded = null;
    }
}
