package moe.a2a.comm.shm;

/**
 * Where everything lies in a rank's files, in bytes. Every file starts with {@link #MAGIC} and its
 * owner's pid. A rank's control file then holds its header (identity, heartbeat, abort notice) and
 * one slot per source rank; its data file holds the receive region at {@link #DATA_AT}. Fields that
 * different processes write lie on different 128-byte lines (two cache lines, so that the
 * adjacent-line prefetcher does not make them share one either).
 */
final class ShmLayout {
    private ShmLayout() {}

    /** "MOEA2ASH" read as a little-endian long. */
    static final long MAGIC = 0x4853413241454f4dL;

    static final long MAGIC_AT = 0;
    static final long PID_AT = 8;

    // control file header, written by its owner
    static final long GROUP_AT = 16;
    static final long SIZE_AT = 24;
    static final long RANK_AT = 32;

    /** Advanced by the owner's heartbeat thread. */
    static final long HEARTBEAT_AT = 128;

    /** 0: none; 1: being written; 2: set. Written by whichever rank aborts the group first. */
    static final long ABORT_STATE_AT = 256;

    static final long ABORT_ORIGIN_AT = 264;
    static final long ABORT_LENGTH_AT = 272;
    static final long ABORT_REASON_AT = 280;
    static final int MAX_REASON_BYTES = 1024;

    static final long SLOTS_AT = 1536;
    static final long SLOT_BYTES = 384;

    // a slot's first line: written by the receiver (the file's owner)
    /** The all-to-all-v sequence number the receiver is ready for. */
    static final long A2A_READY = 0;

    static final long A2A_OFFSET = 8;
    static final long A2A_EXPECT = 16;
    static final long A2A_GEN = 24;

    /** The number of point-to-point messages from this source the receiver is ready for. */
    static final long P2P_READY = 32;

    static final long P2P_EXPECT = 40;
    static final long P2P_GEN = 48;

    // a slot's second line: written by the source
    static final long A2A_DONE = 128;
    static final long A2A_SENT = 136;
    static final long P2P_DONE = 144;
    static final long P2P_SENT = 152;

    // a slot's third line: written by the source; two sets, by the sequence number's parity
    static final long SIGNAL_SEQ = 256;
    static final long SIGNAL_VALUE = 264;
    static final long SIGNAL_PARITY_STRIDE = 16;

    /** Where a data file's receive region starts (page-aligned). */
    static final long DATA_AT = 4096;

    /** The largest receive region: its file must stay viewable as one ByteBuffer. */
    static final long MAX_REGION_BYTES = ((Integer.MAX_VALUE - DATA_AT) / 4096) * 4096;

    /** Segments in a receive region start at multiples of this. */
    static final long SEGMENT_ALIGN = 64;

    static long slot(int src) {
        return SLOTS_AT + src * SLOT_BYTES;
    }

    static long controlBytes(int size) {
        return SLOTS_AT + size * SLOT_BYTES;
    }

    static long align(long bytes) {
        return (bytes + SEGMENT_ALIGN - 1) & -SEGMENT_ALIGN;
    }
}
