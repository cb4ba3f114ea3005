package moe.a2a.comm;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A collective started by {@link AsyncCollectives}: wait on it before touching its buffers. Its
 * failure is rethrown by {@link #await}, as the blocking call would have thrown it.
 */
public final class CollectiveHandle {
    private final CompletableFuture<Void> done;

    CollectiveHandle(CompletableFuture<Void> done) {
        this.done = done;
    }

    /** Whether the collective has finished, well or not. */
    public boolean isDone() {
        return done.isDone();
    }

    /**
     * Waits until the collective has finished.
     *
     * @throws A2aException or the argument exception the collective failed with
     */
    public void await() {
        try {
            done.join();
        } catch (CompletionException | CancellationException e) {
            throw unwrap(e);
        }
    }

    /**
     * Waits at most {@code timeout} for the collective to finish.
     *
     * @return false if it is still running
     * @throws A2aException or the argument exception the collective failed with
     */
    public boolean await(long timeout, TimeUnit unit) {
        try {
            done.get(timeout, unit);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException | CancellationException e) {
            throw unwrap(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new A2aException("interrupted while waiting for a collective", e);
        }
    }

    private static RuntimeException unwrap(Exception e) {
        Throwable cause = e.getCause() == null ? e : e.getCause();
        if (cause instanceof RuntimeException runtime) {
            return runtime;
        }
        return new A2aException("collective failed: " + cause, cause);
    }
}
