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
            for (double share : placement.sharesOf(r)) {
                slots.addShares(share);
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
        double[][] rankShares = new double[worldSize][];
        boolean shares = false;
        for (int r = 0; r < worldSize; r++) {
            RankSlots slots = spec.getRanks(r);
            rankExperts[r] = slots.getExpertsList().stream().mapToInt(e -> e).toArray();
            rankShares[r] = slots.getSharesList().stream().mapToDouble(v -> v).toArray();
            shares |= slots.getSharesCount() > 0;
        }
        try {
            return shares
                    ? Placement.of(spec.getVersion(), numExperts, rankExperts, rankShares)
                    : Placement.of(spec.getVersion(), numExperts, rankExperts);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("placement." + e.getMessage(), e);
        }
    }
}
