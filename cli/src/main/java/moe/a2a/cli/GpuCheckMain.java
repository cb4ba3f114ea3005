package moe.a2a.cli;

import java.util.List;
import moe.a2a.gpu.GpuCheck;

/**
 * {@code scripts/gpu-check.sh}'s entry: {@link GpuCheck}'s checks, then the served path on the
 * device ({@link GpuServedCheck}), in one table; the same arguments and exit codes as GpuCheck.
 */
public final class GpuCheckMain {
    private GpuCheckMain() {}

    public static void main(String[] args) {
        System.exit(GpuCheck.run(args, List.of(new GpuServedCheck())));
    }
}
