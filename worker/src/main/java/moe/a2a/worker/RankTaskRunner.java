package moe.a2a.worker;

import moe.a2a.experts.task.RankContext;
import moe.a2a.experts.task.RankTaskHandlers;
import moe.a2a.protocol.RankTaskCodec;
import moe.a2a.v1.RankTaskRequest;

/**
 * Runs this rank's part of a rank task through the installed handlers and answers it on the
 * session: the handler's answer, or its error (after aborting the group unless it refused), for the
 * control plane to break the group. Owned by the worker's data-plane thread.
 */
final class RankTaskRunner {

    void run(RankTaskRequest request, RankContext rank, SessionSender sender) {
        byte[] answer;
        try {
            answer = RankTaskHandlers.installed().run(RankTaskCodec.task(request), rank);
        } catch (RuntimeException | OutOfMemoryError e) {
            sender.send(RankTaskCodec.failure(request.getTaskId(), String.valueOf(e.getMessage())));
            return;
        }
        sender.send(RankTaskCodec.result(request.getTaskId(), answer));
    }
}
