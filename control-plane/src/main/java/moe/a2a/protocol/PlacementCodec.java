package moe.a2a.protocol;

import moe.a2a.dispatch.Placement;
import moe.a2a.v1.PlacementSpec;
import moe.a2a.v1.RankSlots;

/** {@link Placement} to and from the cluster protocol's {@link PlacementSpec}. Stateless. */
public final class PlacementCodec {
    private PlacementCodec() {}

    public static PlacementSpec encode(Placement placement) {
        PlacementSpec.Builder out = PlacementSpec.newBuilder().setVersion(placement.version());
        for (int r = 0; r < placement.worldSize(); r++) {
            RankSlots.Builder slots = RankSlots.newBuilder();
            for (int e : placement.expertsOf(r)) {
                slots.addExperts(e);
            }
            out.addRanks(slots);
        }
        return out.build();
    }

    /**
     * The placement the control plane sent, checked against the model and group it came with.
     *
     * @throws IllegalArgumentException naming the field of {@code placement} that is wrong
     */
    public static Placement decode(PlacementSpec spec, int numExperts, int worldSize) {
        if (spec.getVersion() < Placement.FIRST_VERSION) {
            throw new IllegalArgumentException(
                    "placement.version: "
                            + spec.getVersion()
                            + " (expected: >= "
                            + Placement.FIRST_VERSION
                            + ")");
        }
        if (spec.getRanksCount() != worldSize) {
            throw new IllegalArgumentException(
                    "placement.ranks: "
                            + spec.getRanksCount()
                            + " (expected: "
                            + worldSize
                            + ", the world size)");
        }
        int[][] rankExperts = new int[worldSize][];
        for (int r = 0; r < worldSize; r++) {
            rankExperts[r] = spec.getRanks(r).getExpertsList().stream().mapToInt(e -> e).toArray();
        }
        try {
            return Placement.of(spec.getVersion(), numExperts, rankExperts);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("placement." + e.getMessage(), e);
        }
    }
}
