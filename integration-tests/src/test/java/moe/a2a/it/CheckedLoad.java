package moe.a2a.it;

import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import moe.a2a.v1.MoeServiceGrpc;

/**
 * Clients that send seeded Forward requests without pause while faults come and go, each answer
 * checked against the reference: it counts the outcomes by status, keeps the wrong answers and the
 * failures, and the slowest failure.
 */
final class CheckedLoad {
    private final SeededTraffic traffic;
    private final ManagedChannel channel;
    private final int deadlineSeconds;
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final List<Thread> clients = new ArrayList<>();
    private final ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
    private final Map<String, LongAdder> outcomes = new ConcurrentHashMap<>();
    private final AtomicLong answered = new AtomicLong();
    private final AtomicLong slowestFailureMs = new AtomicLong();

    /**
     * Starts {@code clients} clients, client c's request seeds counting up from {@code seedBase *
     * (c + 1)}.
     */
    CheckedLoad(
            SeededTraffic traffic,
            ManagedChannel channel,
            int clients,
            long seedBase,
            int deadlineSeconds) {
        this.traffic = traffic;
        this.channel = channel;
        this.deadlineSeconds = deadlineSeconds;
        for (int c = 0; c < clients; c++) {
            final long base = seedBase * (c + 1);
            Thread t = new Thread(() -> run(base), "client-" + c);
            t.start();
            this.clients.add(t);
        }
    }

    /** Waits for {@code more} answers, or fails naming what {@code logs} gives. */
    void awaitAnswers(int more, Supplier<String> logs) throws InterruptedException {
        long target = answered.get() + more;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (answered.get() < target) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(
                        "fewer than " + more + " answers within 60 s" + logs.get());
            }
            Thread.sleep(20);
        }
    }

    /** Stops sending, and waits for the requests in flight. */
    void stop() throws InterruptedException {
        running.set(false);
        for (Thread t : clients) {
            t.join(TimeUnit.SECONDS.toMillis(deadlineSeconds + 30));
        }
    }

    /** Answers that differ from the reference. */
    List<String> wrong() {
        return List.copyOf(wrong);
    }

    /** Failed requests, as "CODE: description". */
    List<String> failures() {
        return List.copyOf(failures);
    }

    /** Requests by outcome: "OK" or the status code. */
    Map<String, Long> outcomes() {
        Map<String, Long> counts = new TreeMap<>();
        outcomes.forEach((k, v) -> counts.put(k, v.sum()));
        return counts;
    }

    long slowestFailureMs() {
        return slowestFailureMs.get();
    }

    private void run(long base) {
        MoeServiceGrpc.MoeServiceBlockingStub stub = MoeServiceGrpc.newBlockingStub(channel);
        for (long seed = base; running.get(); seed++) {
            long start = System.nanoTime();
            try {
                String mismatch = traffic.forwardAndCheck(stub, seed, deadlineSeconds);
                if (mismatch != null) {
                    wrong.add(mismatch);
                }
                answered.incrementAndGet();
                outcomes.computeIfAbsent("OK", k -> new LongAdder()).increment();
            } catch (StatusRuntimeException e) {
                slowestFailureMs.accumulateAndGet(
                        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start), Math::max);
                outcomes.computeIfAbsent(e.getStatus().getCode().name(), k -> new LongAdder())
                        .increment();
                failures.add(e.getStatus().getCode() + ": " + e.getStatus().getDescription());
                try {
                    Thread.sleep(50);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }
}
