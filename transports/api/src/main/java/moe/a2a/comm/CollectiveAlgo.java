package moe.a2a.comm;

/**
 * How the CPU transports run all-reduce and broadcast over point-to-point messages, as NCCL_ALGO
 * chooses for NCCL. NCCL itself chooses its own algorithm and ignores this.
 */
public enum CollectiveAlgo {
    /**
     * Bandwidth-optimal: all-reduce is a ring reduce-scatter then a ring all-gather, each rank
     * sending {@code 2(N-1)/N} of the buffer in {@code 2(N-1)} rounds; broadcast is a pipelined
     * chain from the root.
     */
    RING,
    /**
     * Latency-optimal: all-reduce is recursive doubling (the whole buffer in {@code log2 N} rounds,
     * ranks beyond the largest power of two folded in first and answered last); broadcast is a
     * binomial tree.
     */
    TREE,
    /**
     * All-reduce: {@link #TREE} up to {@link #TREE_MAX_BYTES}, {@link #RING} above. Broadcast:
     * {@link #TREE} at every size; the chain measured slower from 4 MiB up over TCP and at 64 MiB
     * in-process too (4 ranks, 64 MiB: 178 against 96 ms over TCP, 22 against 16 ms in-process).
     */
    AUTO;

    /**
     * The largest buffer {@link #AUTO} sends by {@link #TREE}. With N ranks a tree all-reduce takes
     * {@code log2 N} rounds of the whole buffer and a ring {@code 2(N-1)} rounds of {@code 1/N} of
     * it: below this size the rounds' fixed cost dominates and the tree wins. Measured with 4 ranks
     * (docs/performance.md, Collectives): the tree is faster up to 256 KiB and the ring from 512
     * KiB, in-process and over TCP alike.
     */
    public static final long TREE_MAX_BYTES = 256 << 10;

    /**
     * {@link #RING} or {@link #TREE}: this algorithm, or {@link #AUTO}'s choice for an all-reduce
     * of this size.
     */
    public CollectiveAlgo resolve(long bytes, int ranks) {
        if (this != AUTO) {
            return this;
        }
        return ranks <= 2 || bytes <= TREE_MAX_BYTES ? TREE : RING;
    }

    /**
     * {@link #RING} or {@link #TREE}: this algorithm, or {@link #AUTO}'s choice for a broadcast.
     */
    public CollectiveAlgo resolveBroadcast() {
        return this == RING ? RING : TREE;
    }
}
