package moe.a2a.control.grpc;

import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.stub.StreamObserver;
import moe.a2a.control.cluster.RemoteCluster;
import moe.a2a.control.cluster.WorkerSessions;
import moe.a2a.v1.ClusterServiceGrpc;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.WorkerMessage;

/** ClusterService: adapts each worker's bidirectional stream to the {@link RemoteCluster}. */
public final class ClusterGrpcService extends ClusterServiceGrpc.ClusterServiceImplBase {
    private final WorkerSessions sessions;

    public ClusterGrpcService(RemoteCluster cluster) {
        this.sessions = new WorkerSessions(cluster);
    }

    @Override
    public StreamObserver<WorkerMessage> session(StreamObserver<ControlMessage> out) {
        return new StreamObserver<>() {
            private WorkerSessions.Handle handle;
            private boolean refused;

            @Override
            public void onNext(WorkerMessage message) {
                if (refused) {
                    return;
                }
                if (handle == null) {
                    if (!message.hasJoin()) {
                        refuse(
                                Status.FAILED_PRECONDITION
                                        .withDescription(
                                                "first message: "
                                                        + message.getKindCase()
                                                        + " (expected: join)")
                                        .asException());
                        return;
                    }
                    try {
                        handle = sessions.join(message.getJoin(), out);
                    } catch (StatusException e) {
                        refuse(e);
                    }
                    return;
                }
                handle.onMessage(message);
            }

            @Override
            public void onError(Throwable t) {
                if (handle != null) {
                    handle.onEnd("session failed: " + Status.fromThrowable(t));
                }
            }

            @Override
            public void onCompleted() {
                if (handle != null) {
                    handle.onEnd("session closed by the worker");
                }
                out.onCompleted();
            }

            private void refuse(StatusException e) {
                refused = true;
                out.onError(e);
            }
        };
    }
}
