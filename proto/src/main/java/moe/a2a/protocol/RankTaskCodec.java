package moe.a2a.protocol;

import com.google.protobuf.ByteString;
import moe.a2a.experts.task.RankTask;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.RankTaskRequest;
import moe.a2a.v1.RankTaskResult;
import moe.a2a.v1.WorkerMessage;

/**
 * Rank tasks as the ClusterService messages that carry them, on both ends of a worker's session:
 * the control plane encodes RankTaskRequest and reads the ranks' RankTaskResult; the worker the
 * other way round. The payloads pass through as bytes.
 */
public final class RankTaskCodec {
    private RankTaskCodec() {}

    public static ControlMessage request(long taskId, RankTask task) {
        return ControlMessage.newBuilder()
                .setRankTask(
                        RankTaskRequest.newBuilder()
                                .setTaskId(taskId)
                                .setKind(task.kind())
                                .setPayload(ByteString.copyFrom(task.payload())))
                .build();
    }

    public static RankTask task(RankTaskRequest request) {
        return new RankTask(request.getKind(), request.getPayload().toByteArray());
    }

    public static WorkerMessage result(long taskId, byte[] payload) {
        return WorkerMessage.newBuilder()
                .setRankTaskResult(
                        RankTaskResult.newBuilder()
                                .setTaskId(taskId)
                                .setPayload(ByteString.copyFrom(payload)))
                .build();
    }

    /** A rank's task that did not run or broke; the control plane breaks the group. */
    public static WorkerMessage failure(long taskId, String error) {
        return WorkerMessage.newBuilder()
                .setRankTaskResult(
                        RankTaskResult.newBuilder()
                                .setTaskId(taskId)
                                .setError(String.valueOf(error)))
                .build();
    }
}
