package moe.a2a.cli;

import java.util.Locale;
import java.util.concurrent.atomic.LongAdder;
import moe.a2a.v1.StepStats;

/** Sums the server's per-step stage times over the answers a client received. Thread-safe. */
final class StageTotals {
    private final LongAdder answers = new LongAdder();
    private final LongAdder queueUs = new LongAdder();
    private final LongAdder routeUs = new LongAdder();
    private final LongAdder dispatchUs = new LongAdder();
    private final LongAdder expertUs = new LongAdder();
    private final LongAdder combineUs = new LongAdder();
    private final LongAdder stepRequests = new LongAdder();

    void add(StepStats stats) {
        answers.increment();
        queueUs.add(stats.getQueueUs());
        routeUs.add(stats.getRouteUs());
        dispatchUs.add(stats.getDispatchUs());
        expertUs.add(stats.getExpertUs());
        combineUs.add(stats.getCombineUs());
        stepRequests.add(stats.getStepRequests());
    }

    /** Mean per answer of each stage of the step it rode in, slowest rank, in ms. */
    String summary() {
        double n = Math.max(1, answers.sum());
        return String.format(
                Locale.ROOT,
                "server stages, mean ms per answer's step: queue %.2f  route %.2f  dispatch %.2f  expert %.2f"
                        + "  combine %.2f  (%.1f requests per step)",
                queueUs.sum() / n / 1000,
                routeUs.sum() / n / 1000,
                dispatchUs.sum() / n / 1000,
                expertUs.sum() / n / 1000,
                combineUs.sum() / n / 1000,
                stepRequests.sum() / n);
    }
}
