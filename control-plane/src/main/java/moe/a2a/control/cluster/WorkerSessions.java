package moe.a2a.control.cluster;

import io.grpc.StatusException;
import io.grpc.stub.StreamObserver;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.Join;
import moe.a2a.v1.WorkerMessage;

/** The gRPC edge's door into {@link RemoteCluster}: join, then one {@link Handle} per session. */
public final class WorkerSessions {
    private final RemoteCluster cluster;

    public WorkerSessions(RemoteCluster cluster) {
        this.cluster = cluster;
    }

    /** Admits the worker or throws the status its call must end with. */
    public Handle join(Join join, StreamObserver<ControlMessage> out) throws StatusException {
        return new Handle(cluster.join(join, out));
    }

    /** One admitted session. Called by its gRPC call's serialized callbacks. */
    public final class Handle {
        private final WorkerSession session;

        private Handle(WorkerSession session) {
            this.session = session;
        }

        public void onMessage(WorkerMessage message) {
            cluster.onMessage(session, message);
        }

        public void onEnd(String cause) {
            cluster.onSessionEnd(session, cause);
        }
    }
}
