package moe.a2a.metrics;

/** Every meter moe-a2a registers: its Micrometer name, base unit and description. */
public enum A2aMeters {
    /**
     * Exchange latency per phase (tags {@code phase}, {@code transport}); max over ranks per step.
     */
    EXCHANGE(
            "moe.a2a.exchange",
            "seconds",
            "Latency of one all-to-all phase of a step, slowest rank"),
    /**
     * Exchange time over step time, over the last 16 steps of a layer (tag {@code layer}): the seed
     * documents' communication share.
     */
    COMMUNICATION_SHARE(
            "moe.a2a.communication.share",
            null,
            "Dispatch and combine exchange time over step time, over the layer's last 16 steps"),
    /**
     * Time ranks waited for one peer's rows in one exchange (tags {@code phase}, {@code peer}): a
     * sample per (waiting rank, peer) and step, where the transport measures it (tcp).
     */
    EXCHANGE_WAIT(
            "moe.a2a.exchange.wait",
            "seconds",
            "Time a rank waited for one peer's rows in one exchange of a step"),
    /** 1 while a rank is flagged as slower than the others (tag {@code rank}), else 0. */
    RANK_STRAGGLER(
            "moe.a2a.rank.straggler",
            null,
            "1 while the others wait on this rank more than --straggler-factor times the median peer"),
    /** Step stage latency (tag {@code stage}: queue, route, dispatch, expert, combine). */
    STEP_STAGE("moe.a2a.step.stage", "seconds", "Latency of one stage of a step, slowest rank"),
    /**
     * Token rows sent to each peer rank, both phases (tags {@code rank}, {@code peer}, {@code
     * transport}).
     */
    BYTES_SENT(
            "moe.a2a.transport.sent",
            "bytes",
            "Bytes of token rows a rank sent to a peer rank, dispatch and combine"),
    /**
     * Token rows received from each peer rank, both phases (tags {@code rank}, {@code peer}, {@code
     * transport}).
     */
    BYTES_RECEIVED(
            "moe.a2a.transport.received",
            "bytes",
            "Bytes of token rows a rank received from a peer rank, dispatch and combine"),
    /** Token×k assignments routed per expert (tags {@code layer}, {@code expert}). */
    EXPERT_ROUTED(
            "moe.a2a.expert.routed", "tokens", "Token-expert assignments routed to each expert"),
    /**
     * Token×k assignments dropped over expert capacity, per expert (tags {@code layer}, {@code
     * expert}).
     */
    CAPACITY_DROPPED(
            "moe.a2a.capacity.dropped",
            null,
            "Token-expert assignments dropped because the expert was over capacity"),
    /** Tokens received per rank in dispatch (tags {@code layer}, {@code rank}). */
    RANK_ROUTED(
            "moe.a2a.rank.routed",
            "tokens",
            "Tokens dispatched to each rank, each token once per rank"),
    /** Tokens received per rank in dispatch from other ranks (tags {@code layer}, {@code rank}). */
    RANK_ROUTED_REMOTE(
            "moe.a2a.rank.routed.remote",
            "tokens",
            "Tokens dispatched to each rank from other ranks, each token once per rank"),
    /**
     * Token×k assignments computed per rank: the (token, expert) pairs its experts ran (tags {@code
     * layer}, {@code rank}).
     */
    RANK_PAIRS(
            "moe.a2a.rank.pairs",
            "assignments",
            "Token-expert assignments each rank's experts computed"),
    /** max/mean of tokens per expert over the last 16 steps of a layer (tag {@code layer}). */
    EXPERT_IMBALANCE(
            "moe.a2a.expert.imbalance",
            null,
            "Max over mean of tokens per expert, summed over the layer's last 16 steps"),
    /** max/mean of tokens per rank over the last 16 steps of a layer (tag {@code layer}). */
    RANK_IMBALANCE(
            "moe.a2a.rank.imbalance",
            null,
            "Max over mean of tokens per rank, summed over the layer's last 16 steps"),
    /**
     * max/mean of token×k assignments per rank over the last 16 steps of a layer (tag {@code
     * layer}): the balance the placement buys, where {@link #RANK_IMBALANCE} is the rows it costs.
     */
    RANK_PAIRS_IMBALANCE(
            "moe.a2a.rank.pairs.imbalance",
            null,
            "Max over mean of token-expert assignments per rank, summed over the layer's last 16 steps"),
    /** The version of the expert placement each layer's last step ran with (tag {@code layer}). */
    PLACEMENT_VERSION(
            "moe.a2a.placement.version",
            null,
            "Version of the expert placement the layer's last step ran with"),
    /** Placement changes the coordinator switched a layer to (tag {@code layer}). */
    REBALANCES("moe.a2a.rebalances", null, "Times a layer switched to a new expert placement"),
    /** Weight bytes ranks loaded for placement changes, over all ranks (tag {@code layer}). */
    REBALANCE_MOVED(
            "moe.a2a.rebalance.moved",
            "bytes",
            "Expert weight bytes the ranks loaded to switch a layer's placement"),
    /** Tokens of steps that failed: their requests were answered with an error, not rows. */
    FAILED_STEP_TOKENS(
            "moe.a2a.failed.step",
            "tokens",
            "Tokens whose step failed and were answered with an error"),
    /** Requests waiting in the admission queue. */
    QUEUE_REQUESTS("moe.a2a.queue", "requests", "Requests waiting in the admission queue"),
    /** Tokens of the requests waiting in the admission queue. */
    QUEUE_TOKENS(
            "moe.a2a.queue.tokens",
            "tokens",
            "Tokens of the requests waiting in the admission queue"),
    /** Queued requests dropped before a step: deadline passed or caller cancelled. */
    ABANDONED(
            "moe.a2a.abandoned",
            "requests",
            "Queued requests dropped before their step: deadline passed or the caller cancelled"),
    /** Steps answered, by how they exchanged (tag {@code mode}: normal, low-latency). */
    STEPS("moe.a2a.steps", "steps", "Steps answered, by exchange mode"),
    /** Steps that failed (a rank failed or timed out). */
    STEP_FAILURES("moe.a2a.failed", "steps", "Steps that failed and were answered UNAVAILABLE"),
    /**
     * Data-plane errors by kind (tags {@code transport}, {@code kind}: timeout, peer_failed,
     * other).
     */
    TRANSPORT_ERRORS(
            "moe.a2a.transport.errors", "errors", "Exchange failures of the data plane, by kind"),
    /** Times the rank group was formed again after a failure. */
    COMMUNICATOR_REBUILDS(
            "moe.a2a.communicator.rebuilds",
            "rebuilds",
            "Times the rank group was formed again after a failure"),
    /** Ranks the group is configured for (its world size). */
    RANKS_EXPECTED(
            "moe.a2a.cluster.size", "ranks", "Ranks the group is configured for, its world size"),
    /** Ranks currently held by a live rank (worker sessions for the control plane). */
    RANKS_JOINED("moe.a2a.cluster.joined", "ranks", "Ranks currently held by a live rank"),
    /** Ranks the cluster serves without: lost, their experts' replicas taking their tokens. */
    RANKS_DEGRADED(
            "moe.a2a.cluster.degraded",
            "ranks",
            "Ranks lost that the cluster serves without, their experts' replicas taking their tokens"),
    /** Ranks whose worker lives but is set aside: a link between it and another worker is cut. */
    RANKS_PARTITIONED(
            "moe.a2a.cluster.partitioned",
            "ranks",
            "Ranks set aside because a link between their worker and another is cut"),
    /** Ranks of the formed group, ready to run steps. */
    RANKS_HEALTHY(
            "moe.a2a.cluster.healthy", "ranks", "Ranks in the formed group, ready to run steps"),
    /** What one local expert's weights take, where the rank holds them (device, host). */
    EXPERT_WEIGHT_BYTES(
            "moe.a2a.rank.expert.weight",
            "bytes",
            "Memory one local expert's weights take on the device or the host"),
    /** What all of the rank's local experts' weights take, every layer, device or host. */
    WEIGHT_BYTES(
            "moe.a2a.rank.weight",
            "bytes",
            "Memory the rank's local experts' weights take on the device or the host, every layer");

    private final String meterName;
    private final String baseUnit;
    private final String description;

    A2aMeters(String meterName, String baseUnit, String description) {
        this.meterName = meterName;
        this.baseUnit = baseUnit;
        this.description = description;
    }

    public String meterName() {
        return meterName;
    }

    /** The unit, or null for unitless ratios. */
    public String baseUnit() {
        return baseUnit;
    }

    public String description() {
        return description;
    }
}
