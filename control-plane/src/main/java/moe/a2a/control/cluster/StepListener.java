package moe.a2a.control.cluster;

/** Told about every finished step and every failed one; used by metrics. Called on the scheduler thread. */
public interface StepListener {
    void onStep(StepStatsSnapshot stats, long[] queueNs);

    void onStepFailed(Throwable cause);
}
