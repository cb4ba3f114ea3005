package moe.a2a.comm;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;

/**
 * A rank's collectives as non-blocking calls: each is queued, in the order called, on a progress
 * thread that owns the communicator from then on, and returns a {@link CollectiveHandle} at once,
 * so the rank computes while the bytes move. Every rank must still start the same collectives in
 * the same order. While a handle is outstanding the caller must not touch its buffers, nor call the
 * communicator itself: a blocking call goes through {@link #drain} first.
 */
public final class AsyncCollectives implements AutoCloseable {
    private final Communicator comm;
    private final ExecutorService progress;
    private CompletableFuture<Void> last = CompletableFuture.completedFuture(null);

    public AsyncCollectives(Communicator comm) {
        this.comm = comm;
        this.progress =
                Executors.newSingleThreadExecutor(
                        r -> {
                            Thread t = new Thread(r, "moe-a2a-collectives-rank-" + comm.rank());
                            t.setDaemon(true);
                            return t;
                        });
    }

    /** The communicator, for blocking calls once {@link #drain} returned. */
    public Communicator communicator() {
        return comm;
    }

    /** {@link Communicator#allReduce}, without blocking. */
    public CollectiveHandle allReduce(
            ByteBuffer send,
            ByteBuffer recv,
            int count,
            DType dtype,
            ReduceOp op,
            CollectiveAlgo algo) {
        return submit(() -> comm.allReduce(send, recv, count, dtype, op, algo));
    }

    /** {@link Communicator#allGather}, without blocking. */
    public CollectiveHandle allGather(ByteBuffer send, ByteBuffer recv, int bytesPerRank) {
        return submit(() -> comm.allGather(send, recv, bytesPerRank));
    }

    /** {@link Communicator#reduceScatter}, without blocking. */
    public CollectiveHandle reduceScatter(
            ByteBuffer send, ByteBuffer recv, int countPerRank, DType dtype, ReduceOp op) {
        return submit(() -> comm.reduceScatter(send, recv, countPerRank, dtype, op));
    }

    /** {@link Communicator#broadcast}, without blocking. */
    public CollectiveHandle broadcast(ByteBuffer buf, int bytes, int root, CollectiveAlgo algo) {
        return submit(() -> comm.broadcast(buf, bytes, root, algo));
    }

    /** {@link Communicator#allToAll}, without blocking. */
    public CollectiveHandle allToAll(ByteBuffer send, ByteBuffer recv, int bytesPerPeer) {
        return submit(() -> comm.allToAll(send, recv, bytesPerPeer));
    }

    /**
     * {@link Communicator#sendRecv}, without blocking; {@code sink} runs on the progress thread.
     */
    public CollectiveHandle sendRecv(
            int to,
            ByteBuffer send,
            int sendOffset,
            int sendBytes,
            int from,
            int recvBytes,
            InboundSink sink) {
        return submit(() -> comm.sendRecv(to, send, sendOffset, sendBytes, from, recvBytes, sink));
    }

    /** {@link Communicator#send}, without blocking. */
    public CollectiveHandle send(int to, ByteBuffer buf, int offset, int bytes) {
        return submit(() -> comm.send(to, buf, offset, bytes));
    }

    /** {@link Communicator#recv}, without blocking. */
    public CollectiveHandle recv(int from, ByteBuffer buf, int offset, int bytes) {
        return submit(() -> comm.recv(from, buf, offset, bytes));
    }

    /**
     * Runs {@code exchanges} (calls on this communicator, such as a {@link
     * moe.a2a.dispatch.Dispatcher}'s dispatch or combine) on the progress thread, in order with the
     * collectives started before and after it, without blocking.
     */
    public CollectiveHandle run(Runnable exchanges) {
        return submit(exchanges);
    }

    /**
     * Waits until every collective started so far has finished, well or not; afterwards the caller
     * may use the communicator directly. Failures are reported by their own handles.
     */
    public void drain() {
        CompletableFuture<Void> tail;
        synchronized (this) {
            tail = last;
        }
        tail.exceptionally(e -> null).join();
    }

    private synchronized CollectiveHandle submit(Runnable op) {
        CompletableFuture<Void> done = CompletableFuture.runAsync(op, progress);
        last = done;
        return new CollectiveHandle(done);
    }

    /** Waits for what was started, then stops the progress thread; the communicator stays open. */
    @Override
    public void close() {
        progress.shutdown();
        try {
            progress.awaitTermination(1, TimeUnit.MINUTES);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
