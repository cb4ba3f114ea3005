package moe.a2a.control.cluster;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.PeerFailedException;
import moe.a2a.experts.RankStepResult;

/** Joins the ranks' parts of one step into one result, or into the step's root failure. */
final class RankResults {
    private RankResults() {}

    /**
     * Completes with every rank's result, or with the first failure that is not merely a
     * consequence of another rank's (a {@link PeerFailedException}).
     */
    static CompletableFuture<RankStepResult[]> all(
            List<CompletableFuture<RankStepResult>> parts, int layer) {
        CompletableFuture<RankStepResult[]> out = new CompletableFuture<>();
        CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]))
                .whenComplete(
                        (ignored, failure) -> {
                            RankStepResult[] results = new RankStepResult[parts.size()];
                            Throwable root = null;
                            for (int r = 0; r < results.length; r++) {
                                try {
                                    results[r] = parts.get(r).join();
                                } catch (CompletionException e) {
                                    Throwable cause = e.getCause() != null ? e.getCause() : e;
                                    if (root == null
                                            || (root instanceof PeerFailedException
                                                    && !(cause instanceof PeerFailedException))) {
                                        root = cause;
                                    }
                                }
                            }
                            if (root == null) {
                                out.complete(results);
                            } else {
                                out.completeExceptionally(
                                        root instanceof A2aException a
                                                ? a
                                                : new A2aException(
                                                        "step failed: layer="
                                                                + layer
                                                                + ", cause="
                                                                + root,
                                                        root));
                            }
                        });
        return out;
    }
}
