package moe.a2a.worker;

import moe.a2a.comm.Transport;
import moe.a2a.v1.AbortGroup;
import moe.a2a.v1.Accepted;
import moe.a2a.v1.ControlMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hands each control message to the piece that acts on it: the rank assignment, the group epochs or
 * the placement staging. A message it cannot handle drops the group and ends the session, so that
 * the control plane learns of it at once. Runs on the worker's data-plane thread, one message at a
 * time in the order they came.
 */
final class ControlMessageHandler {
    private static final Logger LOG = LoggerFactory.getLogger(ControlMessageHandler.class);

    private final RankAssignment assignment;
    private final GroupEpochs epochs;
    private final PlacementStaging staging;

    ControlMessageHandler(RankAssignment assignment, GroupEpochs epochs, PlacementStaging staging) {
        this.assignment = assignment;
        this.epochs = epochs;
        this.staging = staging;
    }

    /** Acts on {@code message}; answers, if at all, on {@code sender}. */
    void handle(ControlMessage message, SessionSender sender) {
        try {
            switch (message.getKindCase()) {
                case ACCEPTED:
                    accept(message.getAccepted());
                    break;
                case PREPARE:
                    epochs.prepare(message.getPrepare(), sender);
                    break;
                case FORM:
                    epochs.form(message.getForm(), sender);
                    break;
                case STEP:
                    epochs.step(message.getStep(), sender);
                    break;
                case RANK_TASK:
                    epochs.rankTask(message.getRankTask(), sender);
                    break;
                case STAGE_PLACEMENT:
                    staging.stage(message.getStagePlacement(), sender);
                    break;
                case ACTIVATE_PLACEMENT:
                    staging.activate(message.getActivatePlacement());
                    break;
                case PROBE_LINKS:
                    sender.send(LinkProbe.answer(message.getProbeLinks()));
                    break;
                case ABORT:
                    epochs.drop(abandoned(message.getAbort()));
                    break;
                default:
                    break;
            }
        } catch (RuntimeException e) {
            LOG.error("cannot handle {}: {}", message.getKindCase(), e.toString());
            epochs.drop(e.toString());
            sender.fail(e);
        }
    }

    /** Why the group of {@code abort}'s epoch is dropped. */
    static String abandoned(AbortGroup abort) {
        return "control plane abandoned epoch " + abort.getEpoch() + ": " + abort.getReason();
    }

    /** Takes the rank given; what was staged for the one before is stale. */
    private void accept(Accepted accepted) {
        Transport transport = assignment.assign(accepted);
        staging.clear();
        assignment.load(accepted, transport);
    }
}
