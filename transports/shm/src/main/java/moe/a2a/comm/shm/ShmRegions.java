package moe.a2a.comm.shm;

import static moe.a2a.comm.shm.ShmLayout.DATA_AT;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.PeerFailedException;
import org.jspecify.annotations.Nullable;

/**
 * The receive regions of one rank's view of a group: its own (which its peers write into), grown
 * into a new data file of the next generation when an exchange needs more, and its peers' (which it
 * writes into), mapped on first use and remapped when their generation changes.
 *
 * <p>Owned by the rank's thread.
 */
final class ShmRegions {
    private final Path dir;
    private final long groupId;
    private final int rank;

    private Arena arena;
    private MemorySegment region;
    private ByteBuffer view;
    private Path path;
    private long gen;

    private final @Nullable ByteBuffer[] peerViews;
    private final @Nullable Arena[] peerArenas;
    private final long[] peerGens;
    private ByteBuffer data = ByteBuffer.allocate(0);
    private long dataGen = -1;

    /** Creates this rank's region of generation 0, {@code bytes} long. */
    ShmRegions(Path dir, long groupId, int rank, int size, long bytes) throws IOException {
        this.dir = dir;
        this.groupId = groupId;
        this.rank = rank;
        this.peerViews = new ByteBuffer[size];
        this.peerArenas = new Arena[size];
        this.peerGens = new long[size];
        Arrays.fill(peerGens, -1);
        this.path = dir.resolve(ShmFiles.data(groupId, rank, 0));
        this.arena = Arena.ofShared();
        try {
            this.region =
                    ShmFiles.create(dir, path.getFileName().toString(), DATA_AT + bytes, arena);
        } catch (IOException | RuntimeException e) {
            arena.close();
            throw e;
        }
        this.view = view(region);
    }

    /** This rank's region, the data starting at {@link ShmLayout#DATA_AT}. */
    ByteBuffer view() {
        return view;
    }

    /**
     * This rank's receive region from {@link ShmLayout#DATA_AT} on, little-endian, as a receive
     * buffer (valid until the region grows).
     */
    ByteBuffer data() {
        if (dataGen != gen) {
            data =
                    view.slice((int) DATA_AT, view.capacity() - (int) DATA_AT)
                            .order(ByteOrder.LITTLE_ENDIAN);
            dataGen = gen;
        }
        return data;
    }

    /** The generation of this rank's region, which its peers map by. */
    long gen() {
        return gen;
    }

    /** Makes this rank's region hold at least {@code bytes}, in a new data file if it must grow. */
    void ensure(long bytes) {
        long capacity = region.byteSize() - DATA_AT;
        if (bytes <= capacity) {
            return;
        }
        if (bytes > ShmLayout.MAX_REGION_BYTES) {
            throw new A2aException(
                    "receive region too large: rank="
                            + rank
                            + ", needBytes="
                            + bytes
                            + ", maxBytes="
                            + ShmLayout.MAX_REGION_BYTES);
        }
        long grown = Math.min(ShmLayout.MAX_REGION_BYTES, Math.max(bytes, 2 * capacity));
        grown = (grown + 4095) & -4096L;
        Path next = dir.resolve(ShmFiles.data(groupId, rank, gen + 1));
        Arena nextArena = Arena.ofShared();
        MemorySegment seg;
        try {
            seg = ShmFiles.create(dir, next.getFileName().toString(), DATA_AT + grown, nextArena);
        } catch (IOException e) {
            nextArena.close();
            throw new A2aException(
                    "cannot grow the receive region: rank="
                            + rank
                            + ", bytes="
                            + grown
                            + ": "
                            + e.getMessage(),
                    e);
        }
        // every writer of the old region finished before this exchange began
        closeQuietly(arena);
        deleteQuietly(path);
        arena = nextArena;
        region = seg;
        view = view(seg);
        path = next;
        gen++;
    }

    /** Peer {@code p}'s region of generation {@code gen}, mapped on first use. */
    ByteBuffer peer(int p, long peerGen) {
        ByteBuffer v = peerViews[p];
        if (v != null && peerGens[p] == peerGen) {
            return v;
        }
        closeQuietly(peerArenas[p]);
        peerViews[p] = null;
        peerArenas[p] = null;
        Arena a = Arena.ofShared();
        Path file = dir.resolve(ShmFiles.data(groupId, p, peerGen));
        MemorySegment seg;
        try {
            seg = ShmFiles.map(file, a);
        } catch (IOException e) {
            a.close();
            throw new PeerFailedException(rank, p, "cannot map its receive region: " + e);
        }
        if (seg == null) {
            a.close();
            throw new PeerFailedException(rank, p, "its receive region is gone: " + file);
        }
        peerArenas[p] = a;
        peerGens[p] = peerGen;
        v = view(seg);
        peerViews[p] = v;
        return v;
    }

    /** Unmaps every region and deletes this rank's file. */
    void close() {
        for (int p = 0; p < peerArenas.length; p++) {
            closeQuietly(peerArenas[p]);
            peerArenas[p] = null;
            peerViews[p] = null;
        }
        closeQuietly(arena);
        deleteQuietly(path);
    }

    private static ByteBuffer view(MemorySegment seg) {
        return seg.asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
    }

    static void closeQuietly(@Nullable Arena a) {
        if (a != null) {
            try {
                a.close();
            } catch (IllegalStateException e) {
                // closed already
            }
        }
    }

    static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            // left behind: the next group's cleanup deletes it once this process is gone
        }
    }
}
