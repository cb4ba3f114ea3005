package moe.a2a.experts;

import java.nio.ByteBuffer;
import moe.a2a.comm.Communicator;
import moe.a2a.dispatch.DType;

/**
 * What runs one rank's share of every step: route, dispatch, experts, combine. {@link RankWorker}
 * on the CPU; a GPU runtime keeps rows in device memory. Owned by the rank's thread.
 */
public interface RankRuntime {
    /** Continues on a new communicator (same rank), as when the old group broke. */
    void rebind(Communicator comm);

    /**
     * Runs one step for this rank's {@code numTokens} tokens ({@code [T, H]} of {@code dtype} in
     * {@code tokens}, from index 0). Every rank of the group runs every step, with zero tokens if
     * it has none.
     */
    RankStepResult step(
            int layer, DType dtype, ByteBuffer tokens, int numTokens, RoutingInput routing);
}
