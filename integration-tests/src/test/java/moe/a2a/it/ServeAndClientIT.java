package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The README's path: {@code serve} as a process, {@code client} as another, answers checked. */
@Timeout(300)
class ServeAndClientIT {
    @TempDir Path dir;

    @Test
    void shouldServeReferenceAnswersToClientProcess() throws Exception {
        serveAndCheck(
                "bf16",
                new String[0],
                new String[][] {
                    {"--routing", "TOPK", "--skew", "1.2", "--dtype", "BF16"},
                    {"--routing", "LOGITS", "--dtype", "FP32", "--layer", "1"},
                    {"--routing", "GATE", "--dtype", "FP16"}
                });
    }

    @Test
    void shouldServeAnswersWithinFp8ToleranceWhenTokensTravelAsFp8() throws Exception {
        serveAndCheck(
                "fp8",
                new String[0],
                new String[][] {
                    {"--routing", "GATE", "--dtype", "BF16"},
                    {"--routing", "TOPK", "--skew", "1.2", "--dtype", "FP32", "--layer", "1"}
                });
    }

    @Test
    void shouldServeReferenceAnswersWhenExpertsHaveReplicas() throws Exception {
        serveAndCheck(
                "bf16",
                new String[] {"--redundant-experts", "4"},
                new String[][] {
                    {"--routing", "TOPK", "--skew", "1.2", "--dtype", "BF16"},
                    {"--routing", "GATE", "--dtype", "FP32", "--layer", "1"}
                });
    }

    @Test
    void shouldServeAnswersWithDropsOverExpertCapacity() throws Exception {
        // one request per step, so that the client knows which pairs each step dropped
        serveAndCheck(
                "bf16",
                new String[] {"--capacity-factor", "1.0"},
                new String[][] {
                    {"--routing", "TOPK", "--skew", "1.5", "--dtype", "FP32", "--concurrency", "1"},
                    {"--routing", "GATE", "--dtype", "BF16", "--concurrency", "1"}
                });
    }

    private void serveAndCheck(String dispatchDType, String[] serveFlags, String[][] clientRuns)
            throws Exception {
        try (CliProcess serve =
                CliProcess.moeA2a(
                        dir,
                        "serve",
                        concat(
                                new String[] {
                                    "serve",
                                    "--port",
                                    "0",
                                    "--metrics-port",
                                    "0",
                                    "--world-size",
                                    "4",
                                    "--experts",
                                    "8",
                                    "--hidden",
                                    "64",
                                    "--ffn",
                                    "96",
                                    "--layers",
                                    "2",
                                    "--seed",
                                    "11",
                                    "--dispatch-dtype",
                                    dispatchDType
                                },
                                serveFlags))) {
            int port = serve.awaitServingPort(Duration.ofSeconds(60));
            for (String[] extra : clientRuns) {
                String[] args =
                        concat(
                                new String[] {
                                    "client",
                                    "--target",
                                    "127.0.0.1:" + port,
                                    "--requests",
                                    "12",
                                    "--verify",
                                    "-1",
                                    "--tokens",
                                    "33"
                                },
                                extra);
                if (!List.of(extra).contains("--concurrency")) {
                    args = concat(args, new String[] {"--concurrency", "4"});
                }
                try (CliProcess client = CliProcess.moeA2a(dir, "client", args)) {
                    int exit = client.awaitExit(Duration.ofSeconds(120));
                    String out = client.output();
                    assertThat(exit).as(out).isZero();
                    assertThat(out)
                            .contains("dispatch " + dispatchDType)
                            .contains("checked 12 answers against the reference: 0 mismatches")
                            .contains("tokens/s")
                            .contains("p99");
                }
            }
        }
    }

    private static String[] concat(String[] a, String[] b) {
        String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
