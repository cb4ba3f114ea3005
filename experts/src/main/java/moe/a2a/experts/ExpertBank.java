package moe.a2a.experts;

import java.nio.FloatBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReferenceArray;
import moe.a2a.dispatch.DispatchHandle;
import moe.a2a.dispatch.DispatchResult;
import moe.a2a.dispatch.Placement;
import org.jspecify.annotations.Nullable;

/**
 * The experts one rank hosts, for every layer, held as stored ({@link HeldExpert}), and their
 * forward pass ({@link SwiGlu}, on every core of the process). Each layer has its own placement: a
 * new one is staged on any thread (loading only the experts the rank lacks) and installed on the
 * rank thread between steps. Scratch buffers grow to the largest group seen; the forward pass and
 * {@link #install} belong to the rank thread. A layer's shared expert, if it has one, is held by
 * every rank and run on the rank's own tokens.
 */
public final class ExpertBank {
    private final WeightSource source;
    private final int rank;
    private final int hidden;
    private final AtomicReferenceArray<LayerSlots> layers;
    private final @Nullable SharedExpert[] shared;
    private FloatBuffer input = Buffers.floats(0);
    private FloatBuffer sharedOut = Buffers.floats(0);
    private final SwiGlu routed;
    private final SwiGlu sharedMlp;

    /** Loads the experts that {@code placement} puts on {@code rank}, for every layer. */
    public ExpertBank(WeightSource source, Placement placement, int rank) {
        this.source = source;
        this.rank = rank;
        this.hidden = source.hidden();
        this.routed = new SwiGlu(hidden, ExpertThreads.shared());
        this.sharedMlp = new SwiGlu(hidden, ExpertThreads.shared());
        this.layers = new AtomicReferenceArray<>(source.layers());
        this.shared = new SharedExpert[source.layers()];
        for (int layer = 0; layer < source.layers(); layer++) {
            layers.set(layer, load(layer, placement, Map.of()));
            shared[layer] = source.sharedExpert(layer);
        }
    }

    /** The placement and weights the next step of {@code layer} uses. */
    public LayerSlots layer(int layer) {
        return layers.get(layer);
    }

    /**
     * Loads this rank's slots of {@code layer} under {@code next}, reusing the weights of experts
     * it already hosts there; steps keep using the current slots until {@link #install}. Any
     * thread; one staging per layer at a time.
     */
    public LayerSlots stage(int layer, Placement next) {
        LayerSlots now = layers.get(layer);
        Map<Integer, HeldExpert> held = new HashMap<>();
        for (int slot = 0; slot < now.weights().length; slot++) {
            held.put(now.placement().expertAt(rank, slot), now.weights()[slot]);
        }
        return load(layer, next, held);
    }

    /** Makes {@code staged} the layer's current slots. Rank thread, between steps. */
    public void install(LayerSlots staged) {
        layers.set(staged.layer(), staged);
    }

    private LayerSlots load(int layer, Placement placement, Map<Integer, HeldExpert> held) {
        Map<Integer, HeldExpert> have = new HashMap<>(held);
        int slots = placement.localExperts(rank);
        HeldExpert[] weights = new HeldExpert[slots];
        long loaded = 0;
        for (int slot = 0; slot < slots; slot++) {
            int expert = placement.expertAt(rank, slot);
            HeldExpert w = have.get(expert);
            if (w == null) {
                w = source.heldExpert(layer, expert);
                have.put(expert, w);
                loaded += w.bytes();
            }
            weights[slot] = w;
        }
        return new LayerSlots(layer, placement, weights, loaded);
    }

    /**
     * Runs every local expert of {@code layer} on its rows of {@code result}; writes fp32 outputs
     * in the handle's grouped order into {@code outputs} ({@code [numExpertRows, H]}).
     */
    public void forward(int layer, DispatchResult result, FloatBuffer outputs) {
        DispatchHandle handle = result.handle();
        HeldExpert[] weights = layers.get(layer).weights();
        for (int slot = 0; slot < handle.localExperts(); slot++) {
            int rows = handle.recvTokensPerLocalExpert(slot);
            if (rows == 0) {
                continue;
            }
            input = Buffers.ensure(input, (long) rows * hidden);
            result.gather(slot, input, 0);
            FloatBuffer out = outputs.slice(handle.expertOffsets(slot) * hidden, rows * hidden);
            routed.forward(weights[slot], input, rows, out);
        }
    }

    /**
     * The bytes one held expert takes (every expert of a model has the same), 0 when none is held.
     */
    public long bytesPerExpert() {
        for (int layer = 0; layer < layers.length(); layer++) {
            HeldExpert[] held = layers.get(layer).weights();
            if (held.length > 0) {
                return held[0].bytes();
            }
        }
        return 0;
    }

    /** Whether {@code layer} has a shared expert. */
    public boolean hasShared(int layer) {
        return shared[layer] != null;
    }

    /**
     * Runs {@code layer}'s shared expert on the rank's own tokens {@code x [rows, H]} (fp32),
     * keeping the result for {@link #addShared}. Every rank holds the shared expert: its tokens
     * never travel for it. It has scratch of its own, so one thread may run it while the rank
     * thread runs {@link #forward}; {@link #addShared} must come after it.
     */
    public void forwardShared(int layer, FloatBuffer x, int rows) {
        SharedExpert s = shared[layer];
        sharedOut = Buffers.ensure(sharedOut, (long) rows * hidden);
        sharedMlp.forward(s.mlp(), x, rows, sharedOut);
        if (s.gate() != null) {
            for (int t = 0; t < rows; t++) {
                double g = 0;
                for (int c = 0; c < hidden; c++) {
                    g += (double) s.gate()[c] * x.get(t * hidden + c);
                }
                float scale = (float) (1 / (1 + Math.exp(-g)));
                for (int c = 0; c < hidden; c++) {
                    sharedOut.put(t * hidden + c, scale * sharedOut.get(t * hidden + c));
                }
            }
        }
    }

    /** Adds the last {@link #forwardShared} result into {@code out [rows, H]}. */
    public void addShared(FloatBuffer out, int rows) {
        for (int i = 0; i < rows * hidden; i++) {
            out.put(i, out.get(i) + sharedOut.get(i));
        }
    }
}
