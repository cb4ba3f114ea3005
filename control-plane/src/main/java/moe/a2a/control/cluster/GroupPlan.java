package moe.a2a.control.cluster;

import java.util.Arrays;
import moe.a2a.comm.Transport;

/**
 * The data plane of one group epoch: one flat group over {@code transport}, or, when {@code
 * memberHosts} is not empty, a group across hosts (its rails over {@code transport}, tcp, and each
 * host's group over shm; {@code memberHosts[r]} is rank r's host, as {@code
 * PrepareGroup.member_hosts} says). Immutable.
 *
 * @param why how it was chosen, for the log
 */
record GroupPlan(Transport transport, int[] memberHosts, String why) {
    GroupPlan {
        memberHosts = memberHosts.clone();
    }

    static GroupPlan flat(Transport transport, String why) {
        return new GroupPlan(transport, new int[0], why);
    }

    boolean acrossHosts() {
        return memberHosts.length > 0;
    }

    /** The hosts a group across hosts spans; 0 for a flat group. */
    int hosts() {
        return acrossHosts() ? Arrays.stream(memberHosts).max().getAsInt() + 1 : 0;
    }

    @Override
    public int[] memberHosts() {
        return memberHosts.clone();
    }

    @Override
    public String toString() {
        return acrossHosts()
                ? transport + " across " + hosts() + " hosts, shm inside each"
                : transport.label();
    }
}
