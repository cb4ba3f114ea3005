package moe.a2a.comm.local;

import moe.a2a.comm.AbstractCollectivesTest;
import moe.a2a.comm.Communicator;

class LocalCollectivesTest extends AbstractCollectivesTest {
    @Override
    protected Communicator[] newGroup(int size, long timeoutNs) {
        LocalGroup group = new LocalGroup(size, timeoutNs);
        Communicator[] comms = new Communicator[size];
        for (int r = 0; r < size; r++) {
            comms[r] = group.communicator(r);
        }
        return comms;
    }
}
