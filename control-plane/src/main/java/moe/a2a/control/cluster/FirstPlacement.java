package moe.a2a.control.cluster;

import java.util.Arrays;
import moe.a2a.dispatch.Placement;
import moe.a2a.dispatch.PlacementPlanner;

/**
 * The placement a cluster starts with, before any load is measured: one slot per expert in
 * contiguous blocks, or, with redundant slots, the planner's placement for even loads (the extra
 * slots go to the first experts, their shares balancing the ranks). Stateless.
 */
public final class FirstPlacement {
    private FirstPlacement() {}

    /**
     * @throws IllegalArgumentException naming {@code --redundant-experts} when {@code experts +
     *     redundant} is not a multiple of {@code worldSize}
     */
    public static Placement decide(int experts, int worldSize, int redundant) {
        if (redundant < 0) {
            throw new IllegalArgumentException(
                    "--redundant-experts: " + redundant + " (expected: >= 0)");
        }
        if (redundant == 0) {
            return Placement.contiguous(experts, worldSize);
        }
        int slots = experts + redundant;
        if (slots % worldSize != 0) {
            throw new IllegalArgumentException(
                    "--redundant-experts: "
                            + redundant
                            + " (expected: experts + redundant a multiple of the world size; experts="
                            + experts
                            + ", worldSize="
                            + worldSize
                            + ")");
        }
        double[] even = new double[experts];
        Arrays.fill(even, 1);
        return PlacementPlanner.plan(even, worldSize, slots, 1, 1)
                .placement(Placement.FIRST_VERSION, experts, worldSize);
    }
}
