package moe.a2a.experts.task;

import java.util.Collections;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeMap;

/**
 * The installed {@link RankTaskHandler}s by kind, looked up once, and the rules every rank applies
 * when it runs one: a refusal leaves the group whole, any other failure aborts the group's
 * communicators so that the peers fail at once instead of at their exchange timeout. Immutable.
 */
public final class RankTaskHandlers {
    private final Map<String, RankTaskHandler> byKind;

    private RankTaskHandlers(Map<String, RankTaskHandler> byKind) {
        this.byKind = byKind;
    }

    /** The handlers on this class's class path, found once. */
    public static RankTaskHandlers installed() {
        return Installed.HANDLERS;
    }

    /**
     * Runs {@code task}'s handler on this rank, with the failure rules above.
     *
     * @throws RankTaskRefusedException when no handler runs the kind (naming it), or the handler
     *     refused; the communicators are untouched
     * @throws RuntimeException the handler's failure, after aborting the communicators
     */
    public byte[] run(RankTask task, RankContext rank) {
        RankTaskHandler handler = byKind.get(task.kind());
        if (handler == null) {
            throw new RankTaskRefusedException(
                    "rank task: unknown kind "
                            + task.kind()
                            + " (expected: one of "
                            + byKind.keySet()
                            + ")");
        }
        try {
            return handler.run(task.payload(), rank);
        } catch (RankTaskRefusedException e) {
            throw e;
        } catch (RuntimeException | OutOfMemoryError e) {
            // a task's buffers may not fit this rank's direct memory: say so, and live
            rank.abort(e);
            throw e;
        }
    }

    /** Holds the lookup, done when first asked for. */
    private static final class Installed {
        static final RankTaskHandlers HANDLERS = load();

        private static RankTaskHandlers load() {
            Map<String, RankTaskHandler> byKind = new TreeMap<>();
            for (RankTaskHandler h :
                    ServiceLoader.load(
                            RankTaskHandler.class, RankTaskHandler.class.getClassLoader())) {
                RankTaskHandler before = byKind.putIfAbsent(h.kind(), h);
                if (before != null) {
                    throw new IllegalStateException(
                            "rank task kind "
                                    + h.kind()
                                    + ": two handlers ("
                                    + before.getClass().getName()
                                    + ", "
                                    + h.getClass().getName()
                                    + ")");
                }
            }
            return new RankTaskHandlers(Collections.unmodifiableMap(byKind));
        }
    }
}
