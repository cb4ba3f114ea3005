package moe.a2a.comm.local;

import moe.a2a.comm.AbstractCommunicatorTest;
import moe.a2a.comm.Communicator;

class LocalCommunicatorTest extends AbstractCommunicatorTest {
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
