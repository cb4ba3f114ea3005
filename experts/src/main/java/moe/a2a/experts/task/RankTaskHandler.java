package moe.a2a.experts.task;

/**
 * Runs one kind of {@link RankTask} on a rank: the service-provider interface through which a
 * module outside the core (the bench) has every rank of a serving group run its code. Found by
 * {@link java.util.ServiceLoader}; {@link RankTaskHandlers} applies the failure rules.
 */
public interface RankTaskHandler {

    /** The {@link RankTask#kind()} this handler runs; unique among the installed handlers. */
    String kind();

    /**
     * Runs this rank's part of a task, on the communicators' owning thread; every rank of the group
     * runs it at once, so collective calls match.
     *
     * @return this rank's answer, encoded as the caller decodes it
     * @throws RankTaskRefusedException when this group cannot run it, before touching the
     *     communicators: the group stays whole
     */
    byte[] run(byte[] payload, RankContext rank);
}
