package moe.a2a.comm.shm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.DataPlane;
import moe.a2a.comm.GroupEpoch;
import moe.a2a.comm.GroupPeers;
import moe.a2a.comm.Hosts;
import moe.a2a.comm.PlaneBinding;
import moe.a2a.comm.Transport;
import org.jspecify.annotations.Nullable;

/**
 * Over shared memory ({@link ShmCommunicator}): the workers of the group are processes of one host
 * and map each other's files in one directory ({@code /dev/shm} by default). Bind only remembers
 * the epoch's settings (rank, size, the group id that names the files, the exchange timeout) and
 * tells the peers nothing; form creates this rank's files and waits for every peer's. The worker
 * tells the control plane which workers it can share memory with through its {@link #domain}.
 */
public final class ShmDataPlane implements DataPlane {
    private final Path directory;
    private final String domain;
    private @Nullable ShmConfig bound;
    private long boundEpoch = -1;

    /**
     * @param directory where the groups' files live: a tmpfs every worker of a group maps
     */
    public ShmDataPlane(Path directory) {
        this.directory = directory;
        this.domain = domain(directory);
    }

    /**
     * Whether {@code directory} can hold a group's files: a directory this process may write in.
     * Returns null when it can, else why not.
     */
    public static @Nullable String unusable(Path directory) {
        if (!Files.isDirectory(directory)) {
            return directory + " is not a directory";
        }
        if (!Files.isWritable(directory)) {
            return directory + " is not writable";
        }
        return null;
    }

    /**
     * The shared-memory domain of this process with {@code directory}: the workers that report the
     * same one can exchange through it. Two processes can share a group's files when they run on
     * one kernel (its boot id, {@code /proc/sys/kernel/random/boot_id}), see each other's pids (the
     * group's liveness checks and stale-file cleanup read the owners' pids: one pid namespace,
     * {@code /proc/self/ns/pid}) and map one directory (its device and inode, so that two
     * containers with their own {@code /dev/shm} differ, and a bind mount of one tmpfs under two
     * paths matches). A host name or {@code /etc/machine-id} would not do: containers of one host
     * may have their own, or share one with another host's image.
     */
    public static String domain(Path directory) {
        String boot = read(Path.of("/proc/sys/kernel/random/boot_id"));
        if (boot.isEmpty()) {
            boot = "host:" + Hosts.localName();
        }
        String pidNs;
        try {
            pidNs = Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString();
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            pidNs = "?";
        }
        String dir;
        try {
            dir =
                    Files.getAttribute(directory, "unix:dev")
                            + ":"
                            + Files.getAttribute(directory, "unix:ino");
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            try {
                dir = directory.toRealPath().toString();
            } catch (IOException e2) {
                dir = directory.toAbsolutePath().toString();
            }
        }
        return "boot=" + boot + ",pidns=" + pidNs + ",dir=" + dir;
    }

    private static String read(Path file) {
        try {
            return Files.readString(file).strip();
        } catch (IOException | SecurityException e) {
            return "";
        }
    }

    public Path directory() {
        return directory;
    }

    /** This worker's {@link #domain(Path)} with its directory. */
    @Override
    public String domain() {
        return domain;
    }

    @Override
    public Transport transport() {
        return ShmTransportProvider.SHM;
    }

    /** The directory the groups' files live in. */
    @Override
    public String description() {
        return directory.toString();
    }

    @Override
    public PlaneBinding bind(GroupEpoch epoch) {
        bound =
                new ShmConfig(
                        epoch.rank(),
                        epoch.worldSize(),
                        epoch.groupId(),
                        directory,
                        epoch.exchangeTimeoutNs());
        boundEpoch = epoch.epoch();
        return PlaneBinding.NONE;
    }

    @Override
    public Communicator form(GroupPeers peers) {
        ShmConfig config = bound;
        if (config == null || peers.epoch() != boundEpoch) {
            throw new A2aException(
                    "form.epoch: " + peers.epoch() + " was never bound on this worker");
        }
        drop();
        return ShmCommunicator.open(config);
    }

    @Override
    public void drop() {
        bound = null;
        boundEpoch = -1;
    }

    @Override
    public void close() {
        drop();
    }
}
