package moe.a2a.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.comm.PeerFailedException;
import moe.a2a.comm.Transport;

/**
 * Records every step into Micrometer. Meters are kept in arrays indexed by layer, expert and rank,
 * so recording a step does no lookups; the per-peer byte counters are registered on first traffic,
 * so a worker exposes only its own rank's. Called on one thread (the scheduler's or the worker's
 * data-plane thread); gauges are read by the scrape thread.
 */
public final class StepMetrics implements StepListener, PlacementListener {
    /** Steps of a layer the imbalance gauges look back over. */
    public static final int IMBALANCE_WINDOW_STEPS = 16;

    private final Timer dispatchExchange;
    private final Timer combineExchange;
    private final Timer queueStage;
    private final Timer routeStage;
    private final Timer dispatchStage;
    private final Timer expertStage;
    private final Timer combineStage;
    private final Counter[][] expertRouted;
    private final Counter[][] capacityDropped;
    private final Counter[][] rankRouted;
    private final Counter[][] rankRoutedRemote;
    private final Counter[][] rankPairs;
    private final AtomicLong[] expertImbalanceBits;
    private final AtomicLong[] rankImbalanceBits;
    private final AtomicLong[] pairsImbalanceBits;
    private final AtomicLong[] placementVersionBits;
    private final Counter[] rebalances;
    private final Counter[] rebalanceMoved;
    private final ImbalanceWindow[] expertWindows;
    private final ImbalanceWindow[] rankWindows;
    private final ImbalanceWindow[] pairsWindows;
    private final AtomicLong[] communicationShareBits;
    private final ShareWindow[] shareWindows;
    private final Counter failures;
    private final Counter normalSteps;
    private final Counter lowLatencySteps;
    private final Counter abandoned;
    private final Counter failedStepTokens;
    private final Counter timeouts;
    private final Counter peerFailures;
    private final Counter otherErrors;
    private final Counter[][] bytesSent;
    private final Counter[][] bytesReceived;
    private final MeterRegistry registry;
    private final String transport;

    /**
     * @param layerNumbers the model's own index of each MoE layer: the {@code layer} tag's values
     */
    public StepMetrics(
            MeterRegistry registry,
            int[] layerNumbers,
            int experts,
            int worldSize,
            Transport transport) {
        final int layers = layerNumbers.length;
        this.registry = registry;
        this.transport = transport.label();
        dispatchExchange = exchange(registry, "dispatch", this.transport);
        combineExchange = exchange(registry, "combine", this.transport);
        queueStage = stage(registry, "queue");
        routeStage = stage(registry, "route");
        dispatchStage = stage(registry, "dispatch");
        expertStage = stage(registry, "expert");
        combineStage = stage(registry, "combine");
        expertRouted = new Counter[layers][experts];
        capacityDropped = new Counter[layers][experts];
        rankRouted = new Counter[layers][worldSize];
        rankRoutedRemote = new Counter[layers][worldSize];
        rankPairs = new Counter[layers][worldSize];
        expertImbalanceBits = new AtomicLong[layers];
        rankImbalanceBits = new AtomicLong[layers];
        pairsImbalanceBits = new AtomicLong[layers];
        placementVersionBits = new AtomicLong[layers];
        rebalances = new Counter[layers];
        rebalanceMoved = new Counter[layers];
        expertWindows = new ImbalanceWindow[layers];
        rankWindows = new ImbalanceWindow[layers];
        pairsWindows = new ImbalanceWindow[layers];
        communicationShareBits = new AtomicLong[layers];
        shareWindows = new ShareWindow[layers];
        for (int l = 0; l < layers; l++) {
            String layer = Integer.toString(layerNumbers[l]);
            for (int e = 0; e < experts; e++) {
                expertRouted[l][e] =
                        counter(registry, A2aMeters.EXPERT_ROUTED)
                                .tag("layer", layer)
                                .tag("expert", Integer.toString(e))
                                .register(registry);
                capacityDropped[l][e] =
                        counter(registry, A2aMeters.CAPACITY_DROPPED)
                                .tag("layer", layer)
                                .tag("expert", Integer.toString(e))
                                .register(registry);
            }
            for (int r = 0; r < worldSize; r++) {
                rankRouted[l][r] = rankCounter(registry, A2aMeters.RANK_ROUTED, layer, r);
                rankRoutedRemote[l][r] =
                        rankCounter(registry, A2aMeters.RANK_ROUTED_REMOTE, layer, r);
                rankPairs[l][r] = rankCounter(registry, A2aMeters.RANK_PAIRS, layer, r);
            }
            expertImbalanceBits[l] = gauge(registry, A2aMeters.EXPERT_IMBALANCE, layer);
            rankImbalanceBits[l] = gauge(registry, A2aMeters.RANK_IMBALANCE, layer);
            pairsImbalanceBits[l] = gauge(registry, A2aMeters.RANK_PAIRS_IMBALANCE, layer);
            placementVersionBits[l] = gauge(registry, A2aMeters.PLACEMENT_VERSION, layer);
            rebalances[l] =
                    counter(registry, A2aMeters.REBALANCES).tag("layer", layer).register(registry);
            rebalanceMoved[l] =
                    counter(registry, A2aMeters.REBALANCE_MOVED)
                            .tag("layer", layer)
                            .register(registry);
            expertWindows[l] = new ImbalanceWindow(IMBALANCE_WINDOW_STEPS, experts);
            rankWindows[l] = new ImbalanceWindow(IMBALANCE_WINDOW_STEPS, worldSize);
            pairsWindows[l] = new ImbalanceWindow(IMBALANCE_WINDOW_STEPS, worldSize);
            communicationShareBits[l] = gauge(registry, A2aMeters.COMMUNICATION_SHARE, layer);
            shareWindows[l] = new ShareWindow(IMBALANCE_WINDOW_STEPS);
        }
        failures = counter(registry, A2aMeters.STEP_FAILURES).register(registry);
        normalSteps = counter(registry, A2aMeters.STEPS).tag("mode", "normal").register(registry);
        lowLatencySteps =
                counter(registry, A2aMeters.STEPS).tag("mode", "low-latency").register(registry);
        abandoned = counter(registry, A2aMeters.ABANDONED).register(registry);
        failedStepTokens = counter(registry, A2aMeters.FAILED_STEP_TOKENS).register(registry);
        timeouts = transportError(registry, this.transport, "timeout");
        peerFailures = transportError(registry, this.transport, "peer_failed");
        otherErrors = transportError(registry, this.transport, "other");
        bytesSent = new Counter[worldSize][worldSize];
        bytesReceived = new Counter[worldSize][worldSize];
    }

    @Override
    public void onStep(StepStatsSnapshot stats, long[] queueNs) {
        (stats.lowLatency() ? lowLatencySteps : normalSteps).increment();
        dispatchExchange.record(stats.dispatchNs(), TimeUnit.NANOSECONDS);
        combineExchange.record(stats.combineNs(), TimeUnit.NANOSECONDS);
        for (long q : queueNs) {
            queueStage.record(q, TimeUnit.NANOSECONDS);
        }
        routeStage.record(stats.routeNs(), TimeUnit.NANOSECONDS);
        dispatchStage.record(stats.dispatchNs(), TimeUnit.NANOSECONDS);
        expertStage.record(stats.expertNs(), TimeUnit.NANOSECONDS);
        combineStage.record(stats.combineNs(), TimeUnit.NANOSECONDS);
        int l = stats.layer();
        for (int e = 0; e < stats.tokensPerExpert().length; e++) {
            expertRouted[l][e].increment(stats.tokensPerExpert()[e]);
            capacityDropped[l][e].increment(stats.droppedPerExpert()[e]);
        }
        for (int r = 0; r < stats.tokensPerRank().length; r++) {
            rankRouted[l][r].increment(stats.tokensPerRank()[r]);
            rankRoutedRemote[l][r].increment(stats.remoteTokensPerRank()[r]);
            rankPairs[l][r].increment(stats.pairsPerRank()[r]);
        }
        expertImbalanceBits[l].set(
                Double.doubleToLongBits(expertWindows[l].add(stats.tokensPerExpert())));
        rankImbalanceBits[l].set(
                Double.doubleToLongBits(rankWindows[l].add(stats.tokensPerRank())));
        pairsImbalanceBits[l].set(
                Double.doubleToLongBits(pairsWindows[l].add(stats.pairsPerRank())));
        placementVersionBits[l].set(Double.doubleToLongBits(stats.placementVersion()));
        long exchange = stats.dispatchNs() + stats.combineNs();
        communicationShareBits[l].set(
                Double.doubleToLongBits(
                        shareWindows[l].add(
                                exchange, exchange + stats.routeNs() + stats.expertNs())));
        recordTraffic(A2aMeters.BYTES_SENT, bytesSent, stats.bytesSent());
        recordTraffic(A2aMeters.BYTES_RECEIVED, bytesReceived, stats.bytesReceived());
    }

    @Override
    public void onRebalance(int layer, long version, long loadedBytes) {
        rebalances[layer].increment();
        rebalanceMoved[layer].increment(loadedBytes);
        placementVersionBits[layer].set(Double.doubleToLongBits(version));
    }

    @Override
    public void onAbandoned() {
        abandoned.increment();
    }

    @Override
    public void onStepFailed(Throwable cause, long tokens) {
        failures.increment();
        failedStepTokens.increment(tokens);
        for (Throwable t = cause; t != null; t = t.getCause()) {
            if (t instanceof ExchangeTimeoutException) {
                timeouts.increment();
                return;
            }
            if (t instanceof PeerFailedException) {
                peerFailures.increment();
                return;
            }
            if (t instanceof A2aException) {
                otherErrors.increment();
                return;
            }
        }
    }

    private void recordTraffic(A2aMeters meter, Counter[][] counters, long[][] bytes) {
        for (int r = 0; r < bytes.length; r++) {
            if (bytes[r] == null) {
                continue;
            }
            for (int p = 0; p < bytes[r].length; p++) {
                if (bytes[r][p] == 0) {
                    continue;
                }
                if (counters[r][p] == null) {
                    counters[r][p] =
                            counter(registry, meter)
                                    .tag("rank", Integer.toString(r))
                                    .tag("peer", Integer.toString(p))
                                    .tag("transport", transport)
                                    .register(registry);
                }
                counters[r][p].increment(bytes[r][p]);
            }
        }
    }

    private static Counter transportError(MeterRegistry registry, String transport, String kind) {
        return counter(registry, A2aMeters.TRANSPORT_ERRORS)
                .tag("transport", transport)
                .tag("kind", kind)
                .register(registry);
    }

    private static Timer exchange(MeterRegistry registry, String phase, String transport) {
        return timer(A2aMeters.EXCHANGE)
                .tag("phase", phase)
                .tag("transport", transport)
                .register(registry);
    }

    private static Timer stage(MeterRegistry registry, String stage) {
        return timer(A2aMeters.STEP_STAGE).tag("stage", stage).register(registry);
    }

    private static Timer.Builder timer(A2aMeters meter) {
        return Timer.builder(meter.meterName())
                .description(meter.description())
                .publishPercentileHistogram()
                .minimumExpectedValue(Duration.ofNanos(10_000))
                .maximumExpectedValue(Duration.ofSeconds(30));
    }

    private static Counter.Builder counter(MeterRegistry registry, A2aMeters meter) {
        return Counter.builder(meter.meterName())
                .baseUnit(meter.baseUnit())
                .description(meter.description());
    }

    private static Counter rankCounter(
            MeterRegistry registry, A2aMeters meter, String layer, int rank) {
        return counter(registry, meter)
                .tag("layer", layer)
                .tag("rank", Integer.toString(rank))
                .register(registry);
    }

    private static AtomicLong gauge(MeterRegistry registry, A2aMeters meter, String layer) {
        AtomicLong bits = new AtomicLong(Double.doubleToLongBits(0));
        Gauge.builder(meter.meterName(), bits, b -> Double.longBitsToDouble(b.get()))
                .description(meter.description())
                .tag("layer", layer)
                .register(registry);
        return bits;
    }
}
