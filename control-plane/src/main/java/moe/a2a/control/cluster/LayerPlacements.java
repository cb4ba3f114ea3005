package moe.a2a.control.cluster;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;
import moe.a2a.dispatch.Placement;

/**
 * The placement each layer's steps route by, as the coordinator last switched it. Written by the
 * coordinator between steps, read by any thread (Route, DescribeModel, new workers' Accepted).
 */
public final class LayerPlacements {
    private final AtomicReferenceArray<Placement> layers;

    /** Every one of {@code layers} layers starting with {@code first}. */
    public LayerPlacements(int layers, Placement first) {
        this.layers = new AtomicReferenceArray<>(layers);
        for (int l = 0; l < layers; l++) {
            this.layers.set(l, first);
        }
    }

    public int layers() {
        return layers.length();
    }

    public Placement get(int layer) {
        return layers.get(layer);
    }

    /** Every layer's placement, in layer order. */
    public List<Placement> all() {
        List<Placement> out = new ArrayList<>(layers.length());
        for (int l = 0; l < layers.length(); l++) {
            out.add(layers.get(l));
        }
        return out;
    }

    /** The highest version of any layer. */
    public long newestVersion() {
        long newest = 0;
        for (int l = 0; l < layers.length(); l++) {
            newest = Math.max(newest, layers.get(l).version());
        }
        return newest;
    }

    void set(int layer, Placement placement) {
        layers.set(layer, placement);
    }
}
