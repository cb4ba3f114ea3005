package moe.a2a.comm.shm;

import static moe.a2a.comm.shm.ShmLayout.SIGNAL_PARITY_STRIDE;
import static moe.a2a.comm.shm.ShmLayout.SIGNAL_SEQ;
import static moe.a2a.comm.shm.ShmLayout.SIGNAL_VALUE;
import static moe.a2a.comm.shm.ShmLayout.slot;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import moe.a2a.comm.ExchangePhase;
import org.jspecify.annotations.Nullable;

/**
 * One long from every rank to every rank, through the signal lines of the control files: the
 * all-to-all of counts, and (with no values) the barrier. Each source writes its value into the
 * receiver's slot and releases a sequence word, in one of two sets by the sequence number's parity,
 * since a source cannot get two exchanges ahead of a receiver.
 *
 * <p>Owned by the rank's thread.
 */
final class ShmSignals {
    private static final VarHandle LONG = ShmControl.LONG;
    private static final ValueLayout.OfLong WORD = ShmControl.WORD;

    private final int rank;
    private final int size;
    private final ShmControl control;
    private final MemorySegment own;
    private final ShmWait wait;
    private final boolean[] pending;

    ShmSignals(int rank, int size, ShmControl control, ShmWait wait) {
        this.rank = rank;
        this.size = size;
        this.control = control;
        this.own = control.own();
        this.wait = wait;
        this.pending = wait.pending;
    }

    /**
     * Sends {@code values[dst]} to every peer and receives theirs into {@code received}, as
     * collective {@code k}; with null arrays, a barrier.
     */
    void exchange(
            long step,
            ExchangePhase phase,
            long k,
            long @Nullable [] values,
            long @Nullable [] received) {
        final long parity = (k & 1) * SIGNAL_PARITY_STRIDE;
        final long mine = values == null ? 0 : values[rank];
        for (int dst = 0; dst < size; dst++) {
            if (dst != rank) {
                MemorySegment peer = control.peer(dst);
                long at = slot(rank) + parity;
                peer.set(WORD, at + SIGNAL_VALUE, values == null ? 0 : values[dst]);
                LONG.setRelease(peer, at + SIGNAL_SEQ, k);
            }
        }
        int remaining = wait.all(step, phase);
        while (remaining > 0) {
            boolean progressed = false;
            for (int src = 0; src < size; src++) {
                long at = slot(src) + parity;
                if (pending[src] && (long) LONG.getAcquire(own, at + SIGNAL_SEQ) == k) {
                    if (received != null) {
                        received[src] = own.get(WORD, at + SIGNAL_VALUE);
                    }
                    pending[src] = false;
                    remaining--;
                    progressed = true;
                }
            }
            wait.pass(progressed);
        }
        if (received != null) {
            received[rank] = mine;
        }
    }
}
