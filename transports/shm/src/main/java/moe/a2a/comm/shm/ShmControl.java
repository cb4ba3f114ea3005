package moe.a2a.comm.shm;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.PeerFailedException;
import org.jspecify.annotations.Nullable;

/**
 * The control files of one rank's view of a group: its own (created here, its heartbeat advanced by
 * a daemon thread) and its peers' (mapped once they appear); the group's abort notice, written into
 * every one of them; and the liveness of a peer (its process, its heartbeat).
 */
final class ShmControl {
    static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG;

    private final ShmConfig config;
    private final int rank;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment own;
    private final Path path;
    private final @Nullable MemorySegment[] peers;
    private final @Nullable Arena[] peerArenas;
    private final long[] pids;
    private final long[] lastBeat;
    private final long[] lastBeatChangeNs;
    private final Thread heartbeat;
    private volatile boolean closed;

    /** Creates this rank's control file and starts its heartbeat. */
    ShmControl(ShmConfig config) throws IOException {
        this.config = config;
        this.rank = config.rank();
        final int n = config.size();
        this.peers = new MemorySegment[n];
        this.peerArenas = new Arena[n];
        this.pids = new long[n];
        this.lastBeat = new long[n];
        this.lastBeatChangeNs = new long[n];
        this.path = config.directory().resolve(ShmFiles.control(config.groupId(), rank));
        try {
            this.own =
                    ShmFiles.create(
                            config.directory(),
                            path.getFileName().toString(),
                            ShmLayout.controlBytes(n),
                            arena,
                            seg -> {
                                seg.set(WORD, ShmLayout.GROUP_AT, config.groupId());
                                seg.set(WORD, ShmLayout.SIZE_AT, n);
                                seg.set(WORD, ShmLayout.RANK_AT, config.rank());
                            });
        } catch (IOException | RuntimeException e) {
            arena.close();
            throw e;
        }
        peers[rank] = own;
        pids[rank] = ProcessHandle.current().pid();
        long interval =
                Math.clamp(
                        config.heartbeatTimeoutNs() / 10,
                        TimeUnit.MILLISECONDS.toNanos(5),
                        TimeUnit.MILLISECONDS.toNanos(100));
        this.heartbeat =
                Thread.ofPlatform()
                        .daemon()
                        .name("shm-heartbeat-" + Long.toHexString(config.groupId()) + "-r" + rank)
                        .start(() -> beat(interval));
    }

    private void beat(long intervalNs) {
        long count = 0;
        while (!closed) {
            try {
                LONG.setRelease(own, ShmLayout.HEARTBEAT_AT, ++count);
            } catch (IllegalStateException e) {
                return;
            }
            LockSupport.parkNanos(intervalNs);
        }
    }

    /** This rank's control file. */
    MemorySegment own() {
        return own;
    }

    /** Peer {@code p}'s control file (this rank's for {@code p == rank}). */
    MemorySegment peer(int p) {
        MemorySegment seg = peers[p];
        if (seg == null) {
            throw new A2aException("communicator closed: rank=" + rank);
        }
        return seg;
    }

    /**
     * Maps peer {@code p}'s control file if it is there and belongs to a live member of this group
     * (a stale file whose new owner has not replaced it yet does not).
     */
    boolean tryMap(int p) {
        Arena a = Arena.ofShared();
        MemorySegment seg;
        try {
            seg =
                    ShmFiles.map(
                            config.directory().resolve(ShmFiles.control(config.groupId(), p)), a);
        } catch (IOException e) {
            a.close();
            return false;
        }
        if (seg == null
                || seg.byteSize() < ShmLayout.controlBytes(config.size())
                || seg.get(WORD, ShmLayout.MAGIC_AT) != ShmLayout.MAGIC
                || seg.get(WORD, ShmLayout.GROUP_AT) != config.groupId()
                || seg.get(WORD, ShmLayout.SIZE_AT) != config.size()
                || seg.get(WORD, ShmLayout.RANK_AT) != p
                || !ShmFiles.alive(seg.get(WORD, ShmLayout.PID_AT))) {
            a.close();
            return false;
        }
        peerArenas[p] = a;
        pids[p] = seg.get(WORD, ShmLayout.PID_AT);
        lastBeat[p] = (long) LONG.getAcquire(seg, ShmLayout.HEARTBEAT_AT);
        lastBeatChangeNs[p] = System.nanoTime();
        peers[p] = seg;
        return true;
    }

    /**
     * Throws naming peer {@code p} when its process is gone or its heartbeat has not advanced for
     * the configured heartbeat timeout; {@code now} is {@link System#nanoTime()}.
     */
    void checkAlive(int p, long now) {
        if (!ShmFiles.alive(pids[p])) {
            throw new PeerFailedException(rank, p, "process " + pids[p] + " is gone");
        }
        long beat = (long) LONG.getAcquire(peer(p), ShmLayout.HEARTBEAT_AT);
        if (beat != lastBeat[p]) {
            lastBeat[p] = beat;
            lastBeatChangeNs[p] = now;
        } else if (now - lastBeatChangeNs[p] > config.heartbeatTimeoutNs()) {
            throw new PeerFailedException(
                    rank,
                    p,
                    "no heartbeat for "
                            + TimeUnit.NANOSECONDS.toMillis(now - lastBeatChangeNs[p])
                            + " ms (process "
                            + pids[p]
                            + " stopped?)");
        }
    }

    /**
     * Writes the abort notice (this rank, {@code reason}) into every mapped control file where none
     * is yet: the first notice in each file wins.
     */
    void raiseAbort(String reason) {
        byte[] text = reason.getBytes(StandardCharsets.UTF_8);
        int length = Math.min(text.length, ShmLayout.MAX_REASON_BYTES);
        for (MemorySegment seg : peers) {
            if (seg == null || closed) {
                continue;
            }
            try {
                if (LONG.compareAndSet(seg, ShmLayout.ABORT_STATE_AT, 0L, 1L)) {
                    seg.set(WORD, ShmLayout.ABORT_ORIGIN_AT, rank);
                    seg.set(WORD, ShmLayout.ABORT_LENGTH_AT, length);
                    MemorySegment.copy(
                            text, 0, seg, ValueLayout.JAVA_BYTE, ShmLayout.ABORT_REASON_AT, length);
                    LONG.setRelease(seg, ShmLayout.ABORT_STATE_AT, 2L);
                }
            } catch (IllegalStateException e) {
                // unmapped meanwhile by close()
            }
        }
    }

    /**
     * Throws when this rank's control file carries an abort notice: naming the rank that aborted
     * and its reason, or rethrowing {@code mine} (wrapped) when this rank aborted first.
     */
    void throwIfAborted(@Nullable Throwable mine) {
        long state = (long) LONG.getAcquire(own, ShmLayout.ABORT_STATE_AT);
        if (state == 0) {
            return;
        }
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(100);
        while (state == 1 && System.nanoTime() - until < 0) {
            Thread.onSpinWait();
            state = (long) LONG.getAcquire(own, ShmLayout.ABORT_STATE_AT);
        }
        int origin = (int) own.get(WORD, ShmLayout.ABORT_ORIGIN_AT);
        if (mine != null && (origin == rank || state != 2)) {
            throw new PeerFailedException(rank, mine);
        }
        if (state != 2) {
            throw new PeerFailedException(rank, -1, "group aborted (no reason readable)");
        }
        int length =
                Math.clamp(own.get(WORD, ShmLayout.ABORT_LENGTH_AT), 0, ShmLayout.MAX_REASON_BYTES);
        byte[] text = new byte[length];
        MemorySegment.copy(own, ValueLayout.JAVA_BYTE, ShmLayout.ABORT_REASON_AT, text, 0, length);
        throw new PeerFailedException(rank, origin, new String(text, StandardCharsets.UTF_8));
    }

    /** Stops the heartbeat, unmaps every control file and deletes this rank's. */
    void close() {
        closed = true;
        LockSupport.unpark(heartbeat);
        try {
            heartbeat.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (int p = 0; p < peers.length; p++) {
            peers[p] = null;
            ShmRegions.closeQuietly(peerArenas[p]);
            peerArenas[p] = null;
        }
        ShmRegions.closeQuietly(arena);
        ShmRegions.deleteQuietly(path);
    }
}
