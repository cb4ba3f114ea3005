package moe.a2a.control.cluster;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import moe.a2a.experts.RankStepResult;
import moe.a2a.protocol.RoutingTrace;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records the routing of served steps into a {@link RoutingTrace} file, bounded: every {@code
 * every}-th step is sampled and the last {@code keep} samples are kept in memory (4 bytes per id).
 * The file is rewritten whole (never half) on a thread of its own after every {@link #WRITE_EVERY}
 * samples (skipped while the last write is still under way) and at {@link #close}, so a reader
 * always finds a complete trace. A failed write is logged and serving goes on. {@link #onStep} is
 * called by the scheduler thread only.
 */
public final class RoutingRecorder implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RoutingRecorder.class);

    /** Samples between two writes of the file. */
    public static final int WRITE_EVERY = 256;

    /**
     * Where and how much to record.
     *
     * @param file the trace file, rewritten as it grows
     * @param keep the most recent samples kept
     * @param every one step in this many is sampled
     */
    public record Settings(Path file, int keep, int every) {
        public Settings {
            if (keep <= 0) {
                throw new IllegalArgumentException("--record-steps: " + keep + " (expected: > 0)");
            }
            if (every <= 0) {
                throw new IllegalArgumentException("--record-every: " + every + " (expected: > 0)");
            }
        }
    }

    private final Settings settings;
    private final int experts;
    private final int topK;
    private final int ranks;
    private final ArrayDeque<RoutingTrace.Step> kept = new ArrayDeque<>();
    private final ExecutorService writer;
    private long served;
    private int sinceWrite;
    private boolean warnedMissing;
    private final AtomicBoolean writing = new AtomicBoolean();

    public RoutingRecorder(Settings settings, int experts, int topK, int ranks) {
        this.settings = settings;
        this.experts = experts;
        this.topK = topK;
        this.ranks = ranks;
        this.writer =
                Executors.newSingleThreadExecutor(
                        r -> {
                            Thread t = new Thread(r, "moe-a2a-routing-recorder");
                            t.setDaemon(true);
                            return t;
                        });
    }

    /**
     * Samples a completed step: {@code rankStart[r]} is rank r's first token of the step. A rank
     * that did not return its routing (a worker not asked yet) leaves the step unrecorded.
     */
    void onStep(long stepId, int layer, int[] rankStart, RankStepResult[] results) {
        if (served++ % settings.every() != 0) {
            return;
        }
        int[] perRank = new int[ranks];
        int[] ids = new int[rankStart[ranks] * topK];
        for (int r = 0; r < ranks; r++) {
            perRank[r] = rankStart[r + 1] - rankStart[r];
            int[] routed = results[r].routedIds();
            if (routed.length != perRank[r] * topK) {
                if (!warnedMissing) {
                    warnedMissing = true;
                    LOG.warn("step {}: rank {} returned no routing; not recorded", stepId, r);
                }
                return;
            }
            System.arraycopy(routed, 0, ids, rankStart[r] * topK, routed.length);
        }
        if (kept.size() == settings.keep()) {
            kept.removeFirst();
        }
        kept.addLast(new RoutingTrace.Step(stepId, layer, perRank, ids));
        if (++sinceWrite == WRITE_EVERY) {
            sinceWrite = 0;
            write(false);
        }
    }

    private void write(boolean last) {
        // a periodic write waits for none: while one is under way, the next sample's write skips
        if (!last && !writing.compareAndSet(false, true)) {
            return;
        }
        RoutingTrace trace =
                new RoutingTrace(experts, topK, ranks, served, settings.every(), List.copyOf(kept));
        writer.execute(
                () -> {
                    try {
                        trace.write(settings.file());
                        if (last) {
                            LOG.info(
                                    "routing trace {}: {} steps of {} served",
                                    settings.file(),
                                    trace.steps().size(),
                                    trace.stepsServed());
                        }
                    } catch (IOException | RuntimeException e) {
                        LOG.warn("routing trace {} not written: {}", settings.file(), e.toString());
                    } finally {
                        if (!last) {
                            writing.set(false);
                        }
                    }
                });
    }

    /** Writes what was recorded and waits for the file (call after the last step). */
    @Override
    public void close() {
        write(true);
        writer.shutdown();
        try {
            if (!writer.awaitTermination(30, TimeUnit.SECONDS)) {
                LOG.warn("routing trace {}: still writing after 30 s", settings.file());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
