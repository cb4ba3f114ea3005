package moe.a2a.comm.shm;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;
import moe.a2a.comm.A2aException;
import org.jspecify.annotations.Nullable;

/**
 * The files of the shared-memory transport: their names, their creation (complete before any peer
 * can see them), and the cleanup of those a crashed run left behind.
 *
 * <p>Every name starts with {@link #PREFIX}. A rank's files are {@code
 * moe-a2a-shm-<groupId>-r<rank>.ctl} (control) and {@code moe-a2a-shm-<groupId>-r<rank>-g<gen>.dat}
 * (receive region, generation {@code gen}); each starts with {@link ShmLayout#MAGIC} and its
 * owner's pid. A file is built under {@code moe-a2a-shm-tmp-<pid>-<random>.part} and renamed into
 * place, so a peer never maps a half-written one.
 */
public final class ShmFiles {
    /** What every file of this transport's name starts with. */
    public static final String PREFIX = "moe-a2a-shm-";

    private static final String TMP_PREFIX = PREFIX + "tmp-";
    private static final HexFormat HEX = HexFormat.of();
    private static final FileAttribute<Set<PosixFilePermission>> OWNER_ONLY =
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"));

    private ShmFiles() {}

    static String control(long groupId, int rank) {
        return PREFIX + HEX.toHexDigits(groupId) + "-r" + rank + ".ctl";
    }

    static String data(long groupId, int rank, long gen) {
        return PREFIX + HEX.toHexDigits(groupId) + "-r" + rank + "-g" + gen + ".dat";
    }

    /**
     * Creates {@code dir/name} of {@code bytes} bytes, mapped in {@code arena}, stamped with the
     * magic and this process's pid and filled by {@code init} before it appears under its name
     * (replacing any file of that name).
     */
    static MemorySegment create(
            Path dir, String name, long bytes, Arena arena, Consumer<MemorySegment> init)
            throws IOException {
        return createFile(dir, name, bytes, arena, init);
    }

    /** {@link #create(Path, String, long, Arena, Consumer)} with nothing more to fill in. */
    static MemorySegment create(Path dir, String name, long bytes, Arena arena) throws IOException {
        return createFile(dir, name, bytes, arena, seg -> {});
    }

    private static MemorySegment createFile(
            Path dir, String name, long bytes, Arena arena, Consumer<MemorySegment> init)
            throws IOException {
        long pid = ProcessHandle.current().pid();
        Path tmp =
                dir.resolve(
                        TMP_PREFIX
                                + pid
                                + "-"
                                + HEX.toHexDigits(ThreadLocalRandom.current().nextLong())
                                + ".part");
        MemorySegment seg;
        try (FileChannel ch = openNew(tmp)) {
            reserve(ch, bytes, dir, tmp);
            seg = ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena);
        }
        try {
            seg.set(ValueLayout.JAVA_LONG, ShmLayout.MAGIC_AT, ShmLayout.MAGIC);
            seg.set(ValueLayout.JAVA_LONG, ShmLayout.PID_AT, pid);
            init.accept(seg);
            Files.move(tmp, dir.resolve(name), StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
        return seg;
    }

    /**
     * Writes the file's {@code bytes} as zeros, so that the file system gives it its blocks now. A
     * mapping of a sparse file on a full file system would get them on first write, and fail with
     * SIGBUS in the middle of an exchange; here a full one fails with an error naming it.
     *
     * @throws IOException naming {@code dir} when it has no room (the file is removed)
     */
    private static void reserve(FileChannel ch, long bytes, Path dir, Path file)
            throws IOException {
        ByteBuffer zeros = ByteBuffer.allocate((int) Math.min(bytes, 1 << 20));
        try {
            for (long at = 0; at < bytes; ) {
                zeros.clear().limit((int) Math.min(zeros.capacity(), bytes - at));
                at += ch.write(zeros, at);
            }
        } catch (IOException e) {
            Files.deleteIfExists(file);
            throw new IOException(
                    "shm: no room for "
                            + bytes
                            + " bytes in "
                            + dir
                            + " ("
                            + e.getMessage()
                            + "): give --shm-dir more space, or run --transport tcp",
                    e);
        }
    }

    /**
     * Creates {@code file} readable and writable by its owner alone where the file system has POSIX
     * permissions: rows in flight are no other user's to read. The ranks of a group run as one
     * user.
     */
    private static FileChannel openNew(Path file) throws IOException {
        Set<StandardOpenOption> options =
                EnumSet.of(
                        StandardOpenOption.CREATE_NEW,
                        StandardOpenOption.READ,
                        StandardOpenOption.WRITE);
        try {
            return FileChannel.open(file, options, OWNER_ONLY);
        } catch (UnsupportedOperationException e) {
            return FileChannel.open(file, options);
        }
    }

    /** Maps all of {@code file} in {@code arena}, or returns null when it does not exist. */
    static @Nullable MemorySegment map(Path file, Arena arena) throws IOException {
        try (FileChannel ch =
                FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            return ch.map(FileChannel.MapMode.READ_WRITE, 0, ch.size(), arena);
        } catch (NoSuchFileException e) {
            return null;
        }
    }

    /** Whether process {@code pid} is alive (a pid of another pid namespace reads as dead). */
    static boolean alive(long pid) {
        return pid > 0 && ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    /**
     * Deletes, in {@code dir}, the files of this transport's naming whose owner process is gone:
     * what a crashed or killed run left behind. Files of live processes, files whose owner cannot
     * be read, and files of any other name are left alone; so are files this process may not
     * delete. Every group calls this before it creates its own files. The ranks of a group must
     * share one pid namespace (a pid that cannot be seen reads as dead).
     *
     * @return how many files were deleted
     */
    public static int cleanStale(Path dir) {
        int deleted = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, PREFIX + "*")) {
            for (Path file : files) {
                long pid = ownerPid(file);
                if (pid > 0 && !alive(pid)) {
                    try {
                        if (Files.deleteIfExists(file)) {
                            deleted++;
                        }
                    } catch (IOException e) {
                        // another user's file, or gone meanwhile: not ours to clean
                    }
                }
            }
        } catch (NoSuchFileException e) {
            return 0;
        } catch (IOException e) {
            throw new A2aException("cannot list shared-memory directory: dir=" + dir, e);
        }
        return deleted;
    }

    /** The owner pid of one of this transport's files, or -1 when it cannot be told. */
    private static long ownerPid(Path file) {
        String name = file.getFileName().toString();
        if (name.startsWith(TMP_PREFIX)) {
            int end = name.indexOf('-', TMP_PREFIX.length());
            try {
                return end < 0 ? -1 : Long.parseLong(name.substring(TMP_PREFIX.length(), end));
            } catch (NumberFormatException e) {
                return -1;
            }
        }
        ByteBuffer header = ByteBuffer.allocate(16).order(ByteOrder.nativeOrder());
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            while (header.hasRemaining() && ch.read(header, header.position()) > 0) {
                // read the whole header
            }
        } catch (IOException e) {
            return -1;
        }
        if (header.hasRemaining() || header.getLong(0) != ShmLayout.MAGIC) {
            return -1;
        }
        return header.getLong(8);
    }
}
