package moe.a2a.experts;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntConsumer;
import org.jspecify.annotations.Nullable;

/**
 * The process's cores, shared by every expert computation in it: a step's expert work is cut into
 * parts (column ranges of a projection) that the calling thread and helper threads take in turn, so
 * one rank's experts use every core while the other ranks of the process wait for their exchange.
 * The caller always works too, and can finish every part alone, so a busy process only loses the
 * parallelism, never progress. One per process ({@link #shared}); thread-safe.
 */
public final class ExpertThreads {
    private static volatile @Nullable ExpertThreads shared;

    private final int threads;
    private final Semaphore cores;
    private final LinkedBlockingQueue<Job> queue = new LinkedBlockingQueue<>();

    ExpertThreads(int threads) {
        this.threads = threads;
        this.cores = new Semaphore(threads);
        for (int h = 1; h < threads; h++) {
            Thread helper = new Thread(this::help, "moe-a2a-expert-" + h);
            helper.setDaemon(true);
            helper.start();
        }
    }

    /** The process's expert threads: {@link #use}'s count, else the processors the JVM may use. */
    public static ExpertThreads shared() {
        ExpertThreads s = shared;
        if (s == null) {
            synchronized (ExpertThreads.class) {
                s = shared;
                if (s == null) {
                    s = new ExpertThreads(Runtime.getRuntime().availableProcessors());
                    shared = s;
                }
            }
        }
        return s;
    }

    /**
     * Sets how many threads (the caller included) the process's expert work uses, before anything
     * uses them: a worker given some of a machine's cores uses those only.
     *
     * @throws IllegalArgumentException naming {@code threads} if it is not positive
     * @throws IllegalStateException if the threads are already running with another count
     */
    public static synchronized void use(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads: " + threads + " (expected: at least 1)");
        }
        ExpertThreads s = shared;
        if (s != null && s.threads != threads) {
            throw new IllegalStateException(
                    "expert threads already running: " + s.threads + " (asked: " + threads + ")");
        }
        if (s == null) {
            shared = new ExpertThreads(threads);
        }
    }

    /** Threads that share a computation, the caller included. */
    public int threads() {
        return threads;
    }

    /**
     * Runs {@code part} on {@code 0..parts-1}, each once, on the caller and any idle helper, and
     * returns when all have run.
     *
     * @throws RuntimeException the first part's failure (or its error), once every part has
     *     finished
     */
    public void run(int parts, IntConsumer part) {
        Job job = new Job(parts, part, cores, Thread.currentThread());
        for (int h = Math.min(threads, parts) - 1; h > 0; h--) {
            queue.add(job);
        }
        job.work();
        job.await();
    }

    private void help() {
        while (true) {
            try {
                queue.take().work();
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** One {@link #run}: parts are claimed by counter, the last one to finish wakes the caller. */
    private static final class Job {
        private final int parts;
        private final IntConsumer part;
        private final Semaphore cores;
        private final Thread caller;
        private final AtomicInteger next = new AtomicInteger();
        private final AtomicInteger finished = new AtomicInteger();
        private volatile @Nullable Throwable failure;

        Job(int parts, IntConsumer part, Semaphore cores, Thread caller) {
            this.parts = parts;
            this.part = part;
            this.cores = cores;
            this.caller = caller;
        }

        void work() {
            for (int p = next.getAndIncrement(); p < parts; p = next.getAndIncrement()) {
                cores.acquireUninterruptibly();
                try {
                    part.accept(p);
                } catch (RuntimeException | Error e) {
                    if (failure == null) {
                        failure = e;
                    }
                } finally {
                    cores.release();
                    if (finished.incrementAndGet() == parts) {
                        LockSupport.unpark(caller);
                    }
                }
            }
        }

        void await() {
            while (finished.get() < parts) {
                LockSupport.park(this);
            }
            Throwable e = failure;
            if (e instanceof RuntimeException r) {
                throw r;
            }
            if (e instanceof Error r) {
                throw r;
            }
        }
    }
}
