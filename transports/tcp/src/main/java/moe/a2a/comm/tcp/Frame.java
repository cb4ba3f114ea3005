package moe.a2a.comm.tcp;

import io.netty.buffer.ByteBuf;

/**
 * One decoded frame: its kind, op and payload. The payload is reference-counted: whoever takes the
 * frame releases it. A DATA frame that {@code landed} has an empty payload: its rows were read
 * straight into the region the rank posted for them.
 */
record Frame(byte kind, int phase, long step, long op, ByteBuf payload, boolean landed) {
    Frame(byte kind, int phase, long step, long op, ByteBuf payload) {
        this(kind, phase, step, op, payload, false);
    }

    void release() {
        payload.release();
    }
}
