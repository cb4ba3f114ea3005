package moe.a2a.control.cluster;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import moe.a2a.comm.A2aException;
import moe.a2a.dispatch.Placement;
import moe.a2a.protocol.PlacementCodec;
import moe.a2a.v1.ActivatePlacement;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.PlacementStaged;
import moe.a2a.v1.StagePlacement;

/**
 * New placements going out to the worker processes: staged on every worker (each loads on a thread
 * of its own and answers with the bytes it loaded), then activated on every worker's session, which
 * also carries the steps in order, so every worker switches before the same step. Not thread-safe:
 * guarded by {@link RemoteCluster}'s lock.
 */
final class PlacementRollout {
    private final Object lock;
    private final ServingState state;
    private final Membership membership;
    private final LayerPlacements placements;

    /** Placements being staged on every worker; each answer is the bytes that rank loaded. */
    private final PendingTasks<Long> pending;

    PlacementRollout(
            Object lock,
            ServingState state,
            Membership membership,
            LayerPlacements placements,
            int worldSize) {
        this.lock = lock;
        this.state = state;
        this.membership = membership;
        this.placements = placements;
        this.pending = new PendingTasks<>(worldSize);
    }

    /** See {@link RemoteCluster#stage}. */
    CompletableFuture<Long> stage(int layer, Placement next) {
        final PendingTasks.Task<Long> staging;
        synchronized (lock) {
            A2aException refused = state.refusal();
            if (refused != null) {
                return CompletableFuture.failedFuture(refused);
            }
            staging = pending.open();
            membership.broadcast(
                    ControlMessage.newBuilder()
                            .setStagePlacement(
                                    StagePlacement.newBuilder()
                                            .setStageId(staging.id())
                                            .setLayer(layer)
                                            .setPlacement(PlacementCodec.encode(next)))
                            .build());
        }
        List<CompletableFuture<Long>> parts = staging.parts();
        return CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]))
                .thenApply(ignored -> parts.stream().mapToLong(CompletableFuture::join).sum());
    }

    /** Completes {@code rank}'s part of a staging, or fails it on the rank's error. Lock held. */
    void onStaged(int rank, PlacementStaged staged) {
        if (!staged.getError().isEmpty()) {
            pending.fail(
                    staged.getStageId(),
                    new A2aException(
                            "rank " + rank + " could not stage a placement: " + staged.getError()));
            return;
        }
        pending.complete(staged.getStageId(), rank, staged.getLoadedBytes());
    }

    /**
     * Sends every worker a layer's new placement; each installs it before its next step. Lock held.
     */
    void activateLocked(int layer, Placement next) {
        placements.set(layer, next);
        membership.broadcast(
                ControlMessage.newBuilder()
                        .setActivatePlacement(
                                ActivatePlacement.newBuilder()
                                        .setLayer(layer)
                                        .setPlacement(PlacementCodec.encode(next)))
                        .build());
    }

    /** Fails every staging in flight: the group broke. Lock held. */
    void failAll(A2aException failure) {
        pending.failAll(failure);
    }
}
