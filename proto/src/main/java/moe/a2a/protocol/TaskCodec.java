package moe.a2a.protocol;

import com.google.protobuf.ByteString;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import moe.a2a.dispatch.CapacityFilter;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankStepResult;
import moe.a2a.experts.RoutingInput;
import moe.a2a.kernels.DType;
import moe.a2a.v1.GroupFailed;
import moe.a2a.v1.StepFailure;
import moe.a2a.v1.StepResult;
import moe.a2a.v1.StepTask;
import moe.a2a.v1.Tensor;
import moe.a2a.v1.TopK;
import moe.a2a.v1.WorkerMessage;
import org.jspecify.annotations.Nullable;

/**
 * Steps as the ClusterService messages that carry them, on both ends of a worker's session: the
 * control plane encodes StepTask and decodes the ranks' answers; the worker decodes the tasks and
 * encodes StepResult and StepFailure. Each pair lives here so that both ends read a field the way
 * the other wrote it.
 */
public final class TaskCodec {
    private TaskCodec() {}

    /**
     * One rank's share of a step: its first {@code count} rows of {@code tokens}; with {@code
     * recordRouting} the rank returns the expert ids it chose; {@code lowLatencyTokens} as {@link
     * moe.a2a.experts.RankRuntime#step}'s.
     */
    public static StepTask stepTask(
            long stepId,
            long epoch,
            int layer,
            DType dtype,
            ByteBuffer tokens,
            int count,
            RoutingInput routing,
            int capacity,
            ModelConfig model,
            boolean recordRouting,
            int lowLatencyTokens) {
        int bytes = count * model.hidden() * dtype.sizeBytes();
        StepTask.Builder b =
                StepTask.newBuilder()
                        .setStepId(stepId)
                        .setEpoch(epoch)
                        .setLayer(layer)
                        .setDtype(TensorCodec.wire(dtype))
                        .setNumTokens(count)
                        .setTokens(ByteString.copyFrom(tokens.duplicate().clear().limit(bytes)))
                        .setRecordRouting(recordRouting)
                        .setLlMaxTokens(lowLatencyTokens);
        if (capacity != CapacityFilter.UNLIMITED) {
            b.setCapacity(capacity);
        }
        if (routing instanceof RoutingInput.TopK topk) {
            TopK.Builder t = TopK.newBuilder().setK(model.topK());
            for (int i = 0; i < count * model.topK(); i++) {
                t.addExpertIds(topk.ids()[i]).addWeights(topk.weights()[i]);
            }
            b.setTopk(t);
        } else if (routing instanceof RoutingInput.Logits logits) {
            ByteBuffer raw =
                    ByteBuffer.allocate(count * model.experts() * Float.BYTES)
                            .order(ByteOrder.LITTLE_ENDIAN);
            raw.asFloatBuffer().put(logits.logits(), 0, count * model.experts());
            b.setRouterLogits(
                    Tensor.newBuilder()
                            .setDtype(moe.a2a.v1.DType.FP32)
                            .addShape(count)
                            .addShape(model.experts())
                            .setData(ByteString.copyFrom(raw.array())));
        }
        return b.build();
    }

    /** The routing a step task carries for its {@code n} tokens; none means the model's gate. */
    public static RoutingInput routing(StepTask task, int n) {
        if (task.hasTopk()) {
            int k = task.getTopk().getK();
            int[] ids = new int[n * k];
            float[] weights = new float[n * k];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = task.getTopk().getExpertIds(i);
                weights[i] = task.getTopk().getWeights(i);
            }
            return new RoutingInput.TopK(ids, weights);
        }
        if (task.hasRouterLogits()) {
            return new RoutingInput.Logits(TensorCodec.floats(task.getRouterLogits()));
        }
        return new RoutingInput.ModelGate();
    }

    /**
     * The capacity a step task sets for its rank, or {@link CapacityFilter#UNLIMITED}.
     *
     * @throws InvalidRequestException naming {@code step.capacity} when it is negative
     */
    public static int capacity(StepTask task) {
        if (!task.hasCapacity()) {
            return CapacityFilter.UNLIMITED;
        }
        if (task.getCapacity() < 0) {
            throw new InvalidRequestException(
                    "step.capacity: " + task.getCapacity() + " (expected: >= 0)");
        }
        return task.getCapacity();
    }

    /**
     * The step's low-latency bound, or 0 for a normal step.
     *
     * @throws InvalidRequestException when it is negative, or below the rank's tokens
     */
    public static int lowLatencyTokens(StepTask task) {
        int bound = task.getLlMaxTokens();
        if (bound < 0 || bound > 0 && bound < task.getNumTokens()) {
            throw new InvalidRequestException(
                    "step.ll_max_tokens: "
                            + bound
                            + " (expected: 0, or at least the step's num_tokens "
                            + task.getNumTokens()
                            + ")");
        }
        return bound;
    }

    /**
     * A rank's answer to a step, with the first {@code outputBytes} of its output, and its routed
     * expert ids when {@code withRouting}.
     */
    public static StepResult stepResult(
            long stepId, RankStepResult r, int outputBytes, boolean withRouting) {
        return stepResult(stepId, r, outputBytes, withRouting, null, null);
    }

    /**
     * As {@link #stepResult(long, RankStepResult, int, boolean)}, with the time the rank waited for
     * each world rank in the dispatch and the combine exchange, where they were measured.
     */
    public static StepResult stepResult(
            long stepId,
            RankStepResult r,
            int outputBytes,
            boolean withRouting,
            long @Nullable [] dispatchWaitNs,
            long @Nullable [] combineWaitNs) {
        StepResult.Builder out =
                StepResult.newBuilder()
                        .setStepId(stepId)
                        .setOutput(
                                ByteString.copyFrom(
                                        r.output().duplicate().clear().limit(outputBytes)))
                        .setRecvTokens(r.recvTokens())
                        .setRouteNs(r.routeNs())
                        .setDispatchNs(r.dispatchNs())
                        .setExpertNs(r.expertNs())
                        .setCombineNs(r.combineNs());
        for (long v : r.tokensPerRank()) {
            out.addTokensPerRank(v);
        }
        for (long v : r.pairsPerRank()) {
            out.addPairsPerRank(v);
        }
        for (long v : r.tokensPerExpert()) {
            out.addTokensPerExpert(v);
        }
        for (long v : r.droppedPerExpert()) {
            out.addCapacityDropped(v);
        }
        for (int p = 0; p < r.bytesSent().length; p++) {
            out.addBytesSent(r.bytesSent()[p]).addBytesReceived(r.bytesReceived()[p]);
        }
        if (withRouting) {
            for (int id : r.routedIds()) {
                out.addRoutedIds(id);
            }
        }
        if (dispatchWaitNs != null && combineWaitNs != null) {
            for (int p = 0; p < dispatchWaitNs.length; p++) {
                out.addDispatchWaitNs(dispatchWaitNs[p]).addCombineWaitNs(combineWaitNs[p]);
            }
        }
        return out.build();
    }

    /** The step result as the scheduler joins it; the output stays a view of the message. */
    public static RankStepResult rankStepResult(StepResult res) {
        return new RankStepResult(
                res.getOutput().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN),
                toArray(res.getTokensPerRankList()),
                toArray(res.getPairsPerRankList()),
                toArray(res.getTokensPerExpertList()),
                toArray(res.getCapacityDroppedList()),
                res.getRecvTokens(),
                toArray(res.getBytesSentList()),
                toArray(res.getBytesReceivedList()),
                res.getRouteNs(),
                res.getDispatchNs(),
                res.getExpertNs(),
                res.getCombineNs(),
                res.getRoutedIdsList().stream().mapToInt(Integer::intValue).toArray());
    }

    public static WorkerMessage stepFailure(long stepId, String message) {
        return stepFailure(stepId, message, -1);
    }

    /** A step failure naming the world rank {@code peer} it failed with; -1 names none. */
    public static WorkerMessage stepFailure(long stepId, String message, int peer) {
        StepFailure.Builder failure =
                StepFailure.newBuilder().setStepId(stepId).setMessage(String.valueOf(message));
        if (peer >= 0) {
            failure.setPeer(peer);
        }
        return WorkerMessage.newBuilder().setFailure(failure).build();
    }

    /**
     * Epoch {@code epoch}'s group could not be connected to the world rank {@code peer}; -1 names
     * none (a member never arrived, and the transport cannot tell which).
     */
    public static WorkerMessage groupFailed(long epoch, int peer, String message) {
        GroupFailed.Builder failed =
                GroupFailed.newBuilder().setEpoch(epoch).setMessage(String.valueOf(message));
        if (peer >= 0) {
            failed.setPeer(peer);
        }
        return WorkerMessage.newBuilder().setGroupFailed(failed).build();
    }

    /**
     * Epoch {@code epoch}'s group could not be connected because this worker cannot run {@code
     * transport} now (a resource of its own ran out), whatever its peers do.
     */
    public static WorkerMessage planeUnavailable(long epoch, String transport, String message) {
        return WorkerMessage.newBuilder()
                .setGroupFailed(
                        GroupFailed.newBuilder()
                                .setEpoch(epoch)
                                .setUnavailable(transport)
                                .setMessage(String.valueOf(message)))
                .build();
    }

    /** The values of a repeated int64 field. */
    public static long[] toArray(List<Long> values) {
        long[] out = new long[values.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = values.get(i);
        }
        return out;
    }
}
