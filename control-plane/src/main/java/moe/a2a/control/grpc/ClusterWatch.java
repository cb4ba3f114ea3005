package moe.a2a.control.grpc;

import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import moe.a2a.v1.ClusterState;

/**
 * Keeps WatchCluster calls up to date: looks at the cluster's state every {@link #PERIOD_MILLIS} ms
 * on one daemon thread, and sends each watcher the state whenever it differs from the one that
 * watcher last got. A watcher whose call cannot take a message now (flow control) is skipped and
 * gets the newest state at a later look, never a backlog. Closing ends every watch OK.
 */
final class ClusterWatch implements AutoCloseable {
    static final long PERIOD_MILLIS = 200;

    private final Supplier<ClusterState> cluster;
    private final Set<Watcher> watchers = ConcurrentHashMap.newKeySet();
    private final ScheduledExecutorService timer;
    private volatile boolean closed;

    ClusterWatch(Supplier<ClusterState> cluster) {
        this.cluster = cluster;
        this.timer =
                Executors.newSingleThreadScheduledExecutor(
                        r -> {
                            Thread t = new Thread(r, "moe-a2a-cluster-watch");
                            t.setDaemon(true);
                            return t;
                        });
        timer.scheduleAtFixedRate(this::look, PERIOD_MILLIS, PERIOD_MILLIS, TimeUnit.MILLISECONDS);
    }

    /** Sends the state now, then each change, until the caller cancels or this closes. */
    void watch(StreamObserver<ClusterState> responses) {
        Watcher watcher = new Watcher((ServerCallStreamObserver<ClusterState>) responses);
        watcher.call.setOnCancelHandler(() -> watchers.remove(watcher));
        watcher.offer(cluster.get(), true);
        watchers.add(watcher);
        if (closed && watchers.remove(watcher)) {
            watcher.end();
        }
    }

    @Override
    public void close() {
        closed = true;
        timer.shutdownNow();
        for (Watcher watcher : watchers) {
            if (watchers.remove(watcher)) {
                watcher.end();
            }
        }
    }

    private void look() {
        if (watchers.isEmpty()) {
            return;
        }
        ClusterState now = cluster.get();
        for (Watcher watcher : watchers) {
            watcher.offer(now, false);
        }
    }

    /** One WatchCluster call and the state it last got. */
    private static final class Watcher {
        final ServerCallStreamObserver<ClusterState> call;
        private ClusterState sent;
        private boolean ended;

        Watcher(ServerCallStreamObserver<ClusterState> call) {
            this.call = call;
        }

        /** Sends {@code state} if it is news to this watcher and the call can take it. */
        synchronized void offer(ClusterState state, boolean first) {
            if (ended || state.equals(sent) || call.isCancelled() || !(first || call.isReady())) {
                return;
            }
            call.onNext(state);
            sent = state;
        }

        synchronized void end() {
            ended = true;
            if (!call.isCancelled()) {
                call.onCompleted();
            }
        }
    }
}
