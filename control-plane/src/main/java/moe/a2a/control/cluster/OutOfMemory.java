package moe.a2a.control.cluster;

import org.jspecify.annotations.Nullable;

/** Whether a failure was running out of heap or direct memory, on any rank of this JVM. */
public final class OutOfMemory {
    private OutOfMemory() {}

    /** The OutOfMemoryError {@code failure} is or was caused by, or null. */
    public static @Nullable OutOfMemoryError causeOf(Throwable failure) {
        for (Throwable c = failure; c != null; c = c.getCause()) {
            if (c instanceof OutOfMemoryError oom) {
                return oom;
            }
        }
        return null;
    }
}
