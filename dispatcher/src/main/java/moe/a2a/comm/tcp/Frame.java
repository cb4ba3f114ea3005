package moe.a2a.comm.tcp;

import io.netty.buffer.ByteBuf;

/**
 * One decoded frame: its kind, op and payload. The payload is reference-counted: whoever takes the
 * frame releases it.
 */
record Frame(byte kind, int phase, long step, long op, ByteBuf payload) {
    void release() {
        payload.release();
    }
}
