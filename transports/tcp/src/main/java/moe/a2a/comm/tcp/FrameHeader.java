package moe.a2a.comm.tcp;

import io.netty.buffer.ByteBuf;

/**
 * The fixed header in front of every frame on a data connection. Integers are big-endian (Netty's
 * default); the payload follows immediately.
 *
 * <pre>
 *   0         4      5       6          8               16              24              32
 *   +---------+------+-------+----------+---------------+---------------+---------------+
 *   | magic   | kind | phase | reserved | step (int64)  | op (int64)    | length (int64)|
 *   +---------+------+-------+----------+---------------+---------------+---------------+
 *   magic  0x4D4F4541 ("MOEA"); anything else closes the connection
 *   kind   HELLO (16-byte payload: groupId int64, rank int32, size int32), COUNT (8 bytes),
 *          DATA (length bytes of a collective's rows), SEND (length bytes of a point-to-point
 *          message), ABORT (a UTF-8 reason of at most 4096 bytes)
 *   phase  the ExchangePhase ordinal of COUNT and DATA frames (dispatch, combine, barrier,
 *          collective); SEND: collective
 *   step   the step the exchange belongs to, as the ranks' dispatchers number them (SEND: -1)
 *   op     the frame's sequence number on its ordered pair of ranks, from 0 (HELLO, ABORT: 0)
 * </pre>
 *
 * <p>Sequence numbers count per sender and receiver: every collective sends one COUNT or DATA frame
 * to every peer, a point-to-point message one SEND frame to its peer only, so a pair's numbers stay
 * in step whatever the other ranks do.
 */
final class FrameHeader {
    static final int MAGIC = 0x4D4F4541;
    static final int BYTES = 32;
    static final int HELLO_BYTES = 16;
    static final int MAX_ABORT_BYTES = 4096;

    static final byte HELLO = 1;
    static final byte COUNT = 2;
    static final byte DATA = 3;
    static final byte ABORT = 4;
    static final byte SEND = 5;

    private FrameHeader() {}

    static void write(ByteBuf out, byte kind, int phase, long step, long op, long length) {
        out.writeInt(MAGIC)
                .writeByte(kind)
                .writeByte(phase)
                .writeZero(2)
                .writeLong(step)
                .writeLong(op)
                .writeLong(length);
    }

    /** Whether frames of {@code kind} carry rows that may land where the rank posted them. */
    static boolean carriesRows(byte kind) {
        return kind == DATA || kind == SEND;
    }

    /** How a length disagreement of a frame of rows of {@code kind} is described. */
    static String disagreement(byte kind) {
        return kind == SEND ? "point-to-point lengths disagree" : "all-to-all-v counts disagree";
    }

    static String kindName(byte kind) {
        switch (kind) {
            case HELLO:
                return "HELLO";
            case COUNT:
                return "COUNT";
            case DATA:
                return "DATA";
            case ABORT:
                return "ABORT";
            case SEND:
                return "SEND";
            default:
                return "unknown(" + kind + ")";
        }
    }
}
