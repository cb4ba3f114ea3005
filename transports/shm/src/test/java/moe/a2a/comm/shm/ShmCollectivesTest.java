package moe.a2a.comm.shm;

import moe.a2a.comm.AbstractCollectivesTest;
import moe.a2a.comm.Communicator;
import org.junit.jupiter.api.AfterEach;

class ShmCollectivesTest extends AbstractCollectivesTest {
    private final ShmTestGroups groups = new ShmTestGroups();

    @Override
    protected Communicator[] newGroup(int size, long timeoutNs) throws Exception {
        return groups.open(size, timeoutNs);
    }

    @AfterEach
    void closeGroups() throws Exception {
        groups.closeAll();
    }
}
