package moe.a2a.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import moe.a2a.comm.nccl.NcclDataPlane;
import moe.a2a.comm.nccl.SimulatedNccl;
import moe.a2a.gpu.CheckTable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * gpu-check's served path run where there is no GPU: the same clusters, requests and checks over a
 * simulated NCCL, the worker's rank on the host (fp32 weights, so the reference is the model's
 * own). Every row must pass, which checks the check: its clusters form, its requests are answered
 * in every dtype and mode, the rollout goes through, the checkpoint is written and read, and the
 * answers meet the client's tolerance.
 */
@Timeout(180)
class GpuServedCheckTest {
    @Test
    void shouldServeAndCheckEveryClusterOverASimulatedNccl() {
        SimulatedNccl nccl = new SimulatedNccl();
        CheckTable table = new CheckTable();
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        PrintStream out = System.out;
        System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
        try {
            new GpuServedCheck(d -> new NcclDataPlane(nccl), w -> w).run(0, table);
        } finally {
            System.setOut(out);
        }
        String rows = printed.toString(StandardCharsets.UTF_8);
        assertThat(rows).as(rows).doesNotContain("FAIL").contains("ok   served: FP8 dispatch");
        assertThat(table.failed()).as(rows).isFalse();
        assertThat(rows.lines().filter(l -> l.startsWith("ok   served:")).count()).isEqualTo(4);
        assertThat(rows)
                .contains("24 answers (18 low-latency)")
                .contains("FP8 dispatch: 12 answers (9 low-latency)")
                .contains("capacity 1.0: 12 answers (9 low-latency)")
                .contains("gated shared expert: 12 answers (9 low-latency)");
    }
}
