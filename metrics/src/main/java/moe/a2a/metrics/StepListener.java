package moe.a2a.metrics;

/**
 * Told about every finished step and every failed one; used by metrics. Called on the scheduler
 * thread.
 */
public interface StepListener {
    void onStep(StepStatsSnapshot stats, long[] queueNs);

    /** The step of {@code tokens} tokens failed: none of its requests got rows. */
    void onStepFailed(Throwable cause, long tokens);

    /** A queued request was dropped without a step: its deadline passed or its caller cancelled. */
    void onAbandoned();
}
