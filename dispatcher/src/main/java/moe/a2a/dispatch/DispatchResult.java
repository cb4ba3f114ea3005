package moe.a2a.dispatch;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;

/**
 * What dispatch delivers to this rank: the received rows, grouped per local expert through the
 * {@link DispatchHandle}. Reused by its {@link Dispatcher}: valid until the next dispatch. Owned by
 * the rank thread.
 */
public final class DispatchResult {
    private final DispatchHandle handle;
    ByteBuffer recvBuffer;

    DispatchResult(DispatchHandle handle) {
        this.handle = handle;
    }

    public DispatchHandle handle() {
        return handle;
    }

    /** Tokens received, each once. */
    public int numRecvTokens() {
        return handle.numRecvTokens;
    }

    /** Token×k assignments received, all local experts together. */
    public int numExpertRows() {
        return handle.expertOffsets[handle.expertOffsets.length - 1];
    }

    /**
     * Writes the fp32 inputs of local expert {@code slot} ({@code [recvTokensPerLocalExpert, H]},
     * row-major) into {@code dst} starting at element {@code dstIndex}.
     */
    public void gather(int slot, FloatBuffer dst, int dstIndex) {
        final DispatchRowLayout row = handle.rowLayout;
        final int hidden = row.hidden();
        final int from = handle.expertOffsets[slot];
        final int to = handle.expertOffsets[slot + 1];
        for (int i = from; i < to; i++) {
            row.dtype()
                    .decode(
                            recvBuffer,
                            handle.expertRows[i] * row.rowBytes(),
                            dst,
                            dstIndex + (i - from) * hidden,
                            hidden);
        }
    }

    /**
     * Copies received token {@code index}'s row, as it arrived (in the dispatch's dtype), into
     * {@code dst} at {@code dstByte}.
     */
    public void copyRecvToken(int index, ByteBuffer dst, int dstByte) {
        final DispatchRowLayout row = handle.rowLayout;
        dst.put(dstByte, recvBuffer, index * row.rowBytes(), row.payloadBytes());
    }

    /** Writes received token {@code index} as fp32 into {@code dst[dstIndex..dstIndex+H)}. */
    public void recvToken(int index, float[] dst, int dstIndex) {
        final DispatchRowLayout row = handle.rowLayout;
        row.dtype().decode(recvBuffer, index * row.rowBytes(), dst, dstIndex, row.hidden());
    }
}
