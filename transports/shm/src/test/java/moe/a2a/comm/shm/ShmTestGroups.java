package moe.a2a.comm.shm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.RankThreads;

/**
 * Groups of {@link ShmCommunicator}s whose ranks are threads of this JVM, each rank opening and
 * mapping the group's files itself as a separate process would; the only thing the ranks share is
 * the directory. Every group gets a fresh directory, removed (with whatever is in it) by {@link
 * #closeAll}.
 */
public final class ShmTestGroups {
    private final List<Communicator[]> groups = new ArrayList<>();
    private final List<Path> dirs = new ArrayList<>();

    public Communicator[] open(int size, long timeoutNs) throws Exception {
        Path dir = Files.createTempDirectory("shm-test-");
        dirs.add(dir);
        long groupId = ThreadLocalRandom.current().nextLong();
        List<ShmCommunicator> comms =
                RankThreads.run(
                        size,
                        rank ->
                                ShmCommunicator.open(
                                        new ShmConfig(rank, size, groupId, dir, timeoutNs)));
        Communicator[] group = comms.toArray(new Communicator[0]);
        groups.add(group);
        return group;
    }

    public void closeAll() throws IOException {
        for (Communicator[] group : groups) {
            for (Communicator c : group) {
                c.close();
            }
        }
        groups.clear();
        for (Path dir : dirs) {
            deleteTree(dir);
        }
        dirs.clear();
    }

    static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
