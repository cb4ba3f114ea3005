package moe.a2a.comm.tcp;

import io.netty.channel.ChannelFuture;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.comm.PeerFailedException;
import moe.a2a.comm.PeerWaits;

/**
 * The waits of one rank's calls, each to the call's deadline: for the next frame from a peer
 * (checked to be the one the call expects) and for a write to a peer to be done. A wait that fails
 * aborts the group, then throws: an {@link ExchangeTimeoutException} naming the peer at the
 * deadline, a {@link PeerFailedException}, or a protocol error naming what came and what was
 * expected.
 *
 * <p>Owned by the rank thread.
 */
final class FrameWaits {
    private final int rank;
    private final long timeoutNs;
    private final PeerLinks links;
    private final DataFrames frames;
    private final PeerWaits waited;

    FrameWaits(int rank, long timeoutNs, PeerLinks links, DataFrames frames, PeerWaits waited) {
        this.rank = rank;
        this.timeoutNs = timeoutNs;
        this.links = links;
        this.frames = frames;
        this.waited = waited;
    }

    /**
     * Waits for the frame {@code seq} of {@code kind} from {@code peer}; the caller releases it.
     */
    Frame await(int peer, long step, ExchangePhase phase, long seq, byte kind, long deadline) {
        Frame frame;
        try {
            frame = links.inbox(peer).poll(deadline);
        } catch (A2aException e) {
            links.abort(e);
            throw e;
        }
        if (frame == PeerInbox.TIMED_OUT) {
            ExchangeTimeoutException e =
                    new ExchangeTimeoutException(step, phase, rank, peer, timeoutNs);
            links.abort(e);
            throw e;
        }
        // how late the peer was for this call, whatever order the call waits for its peers in
        long callStart = deadline - timeoutNs;
        waited.record(phase, peer, Math.max(0, frame.completedNanos() - callStart));
        if (frame.op() != seq
                || frame.kind() != kind
                || frame.step() != step
                || frame.phase() != phase.ordinal()) {
            frame.release();
            links.fail(
                    new A2aException(
                            "protocol error: rank="
                                    + rank
                                    + ", peer="
                                    + peer
                                    + ", step="
                                    + frame.step()
                                    + ", phase="
                                    + frame.phase()
                                    + ", op="
                                    + frame.op()
                                    + ", kind="
                                    + FrameHeader.kindName(frame.kind())
                                    + " (expected: step="
                                    + step
                                    + ", phase="
                                    + phase.ordinal()
                                    + ", op="
                                    + seq
                                    + ", kind="
                                    + FrameHeader.kindName(kind)
                                    + ")"));
        }
        return frame;
    }

    /** Waits until the last write to {@code peer} is done. */
    void awaitWrite(int peer, long step, ExchangePhase phase, long deadline) {
        ChannelFuture write = frames.takeWrite(peer);
        long waitNs = Math.max(0, deadline - System.nanoTime());
        if (!write.awaitUninterruptibly(waitNs, TimeUnit.NANOSECONDS)) {
            links.fail(new ExchangeTimeoutException(step, phase, rank, peer, timeoutNs));
        }
        if (!write.isSuccess()) {
            links.fail(new PeerFailedException(rank, peer, "write failed: " + write.cause()));
        }
    }
}
