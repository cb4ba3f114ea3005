package moe.a2a.comm.tcp;

import io.netty.buffer.ByteBuf;

/**
 * One decoded frame: its kind, op and payload, and when its last byte was read ({@code
 * completedNanos}, System.nanoTime). The payload is reference-counted: whoever takes the frame
 * releases it. A DATA frame that {@code landed} has an empty payload: its rows were read straight
 * into the region the rank posted for them.
 */
record Frame(
        byte kind,
        int phase,
        long step,
        long op,
        ByteBuf payload,
        boolean landed,
        long completedNanos) {
    /** A frame whose last byte was read just now. */
    Frame(byte kind, int phase, long step, long op, ByteBuf payload, boolean landed) {
        this(kind, phase, step, op, payload, landed, System.nanoTime());
    }

    Frame(byte kind, int phase, long step, long op, ByteBuf payload) {
        this(kind, phase, step, op, payload, false);
    }

    void release() {
        payload.release();
    }
}
