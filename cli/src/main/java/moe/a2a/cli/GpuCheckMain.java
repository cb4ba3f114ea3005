package moe.a2a.cli;

import java.util.List;
import moe.a2a.gpu.GpuCheck;

/**
 * {@code scripts/gpu-check.sh}'s entry: {@link GpuCheck}'s checks, then the served path on the
 * device ({@link GpuServedCheck}), in one table; the same arguments and exit codes as GpuCheck.
 */
public final class GpuCheckMain {
    private GpuCheckMain() {}

    /**
     * Exits whatever escapes the checks (an {@link OutOfMemoryError}, say): a worker's thread left
     * running must not keep the JVM, and the script, waiting.
     */
    public static void main(String[] args) {
        int code = 1;
        try {
            code = GpuCheck.run(args, List.of(new GpuServedCheck()));
        } catch (Throwable e) {
            e.printStackTrace(System.err);
        } finally {
            System.exit(code);
        }
    }
}
