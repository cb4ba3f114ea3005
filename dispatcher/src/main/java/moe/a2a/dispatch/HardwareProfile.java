package moe.a2a.dispatch;

import java.util.List;

/**
 * What a step's time is predicted from ({@link StepPrediction}): each rank's link bandwidth inside
 * its node and between nodes, each direction, and its experts' dense bf16 FLOP/s. Peak figures from
 * the vendors' data sheets: a model, not a measurement.
 *
 * @param ranksPerNode ranks (GPUs) that share a node's fast links
 * @param intraNodeGBps one rank's bandwidth to the other ranks of its node, each direction, in GB/s
 * @param interNodeGBps one rank's bandwidth to other nodes, each direction, in GB/s; 0 for a single
 *     node
 * @param expertTflops one rank's dense bf16 tensor throughput, in TFLOP/s
 * @param source where the figures come from
 */
public record HardwareProfile(
        String name,
        int ranksPerNode,
        double intraNodeGBps,
        double interNodeGBps,
        double expertTflops,
        String source) {

    /**
     * Eight H200 SXM in one node: NVLink 4 at 900 GB/s per GPU, both directions together, so 450
     * each way; 989 TFLOP/s dense bf16 (1,979 with sparsity).
     */
    public static final HardwareProfile H200_NVLINK_8 =
            new HardwareProfile(
                    "h200-nvlink-8",
                    8,
                    450,
                    0,
                    989,
                    "NVIDIA H200 Tensor Core GPU data sheet (NVLink 900 GB/s; BF16 1,979 TFLOPS"
                            + " with sparsity)");

    /**
     * Nodes of eight H200 SXM (as above) joined by 400 Gb/s InfiniBand, one NDR port per GPU: 50
     * GB/s each way per rank between nodes.
     */
    public static final HardwareProfile H200_IB400 =
            new HardwareProfile(
                    "h200-ib400",
                    8,
                    450,
                    50,
                    989,
                    "NVIDIA H200 data sheet as h200-nvlink-8; NVIDIA ConnectX-7 NDR 400 Gb/s per"
                            + " port, one per GPU as in DGX H200");

    public static final List<HardwareProfile> BUILT_IN = List.of(H200_NVLINK_8, H200_IB400);

    public HardwareProfile {
        check(ranksPerNode > 0, "ranks_per_node: " + ranksPerNode + " (expected: > 0)");
        check(intraNodeGBps > 0, "intra_node_gbps: " + intraNodeGBps + " (expected: > 0)");
        check(interNodeGBps >= 0, "inter_node_gbps: " + interNodeGBps + " (expected: >= 0)");
        check(expertTflops > 0, "expert_tflops: " + expertTflops + " (expected: > 0)");
    }

    /**
     * @throws IllegalArgumentException naming the built-in profiles when {@code name} is none
     */
    public static HardwareProfile named(String name) {
        for (HardwareProfile p : BUILT_IN) {
            if (p.name.equals(name)) {
                return p;
            }
        }
        throw new IllegalArgumentException(
                "hardware: "
                        + name
                        + " (expected: one of "
                        + BUILT_IN.stream().map(HardwareProfile::name).toList()
                        + ", or a profile file)");
    }

    /** The node of {@code rank}. */
    int node(int rank) {
        return rank / ranksPerNode;
    }

    private static void check(boolean ok, String message) {
        if (!ok) {
            throw new IllegalArgumentException(message);
        }
    }
}
