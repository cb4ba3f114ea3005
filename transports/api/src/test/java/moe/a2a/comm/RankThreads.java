package moe.a2a.comm;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/** Runs one task per rank, each on its own thread, and collects the results in rank order. */
public final class RankThreads {
    private RankThreads() {}

    /**
     * Runs {@code task} for ranks {@code 0..n-1} concurrently and waits for all of them; rethrows
     * the lowest rank's failure with every other rank's failure attached as suppressed, since the
     * first rank to fail often makes the others fail too and is not always the lowest.
     */
    public static <T> List<T> run(int n, IntFunction<T> task) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<T>> futures = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                final int rank = r;
                futures.add(pool.submit(() -> task.apply(rank)));
            }
            List<T> results = new ArrayList<>();
            Exception first = null;
            for (Future<T> f : futures) {
                try {
                    results.add(f.get(60, TimeUnit.SECONDS));
                } catch (ExecutionException e) {
                    Exception failure = e.getCause() instanceof Exception cause ? cause : e;
                    if (first == null) {
                        first = failure;
                    } else {
                        first.addSuppressed(failure);
                    }
                }
            }
            if (first != null) {
                throw first;
            }
            return results;
        } finally {
            pool.shutdownNow();
        }
    }
}
