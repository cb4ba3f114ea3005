package moe.a2a.bench;

import java.nio.ByteBuffer;
import moe.a2a.dispatch.DispatchResult;

/**
 * What the dispatcher benchmark runs between dispatch and combine, timed, so that its report gives
 * the step's communication share: real experts on the rows a rank received.
 */
@FunctionalInterface
public interface ExpertStage {
    /**
     * Runs the experts on {@code result}'s rows and writes into {@code back} (combine's rows: one
     * per received token, in receive order, in the dispatch's dtype) each token's weighted sum.
     */
    void run(DispatchResult result, ByteBuffer back);
}
