package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** gpu-check's runner: one check's failure is a row, and the checks after it still run. */
class GpuCheckTest {
    @Test
    void shouldRecordAFailedCheckAndRunTheNext() {
        CheckTable table = new CheckTable();
        List<String> ran = new ArrayList<>();
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        try (PrintStream capture = new PrintStream(printed, true, StandardCharsets.UTF_8)) {
            System.setOut(capture);
            System.setErr(capture);
            GpuCheck.timed(
                    "first",
                    table,
                    () -> {
                        ran.add("first");
                        throw new IllegalStateException("nvrtc log\nline 2 | column");
                    });
            GpuCheck.timed(
                    "second",
                    table,
                    () -> {
                        ran.add("second");
                        table.row("second", "fine", true);
                    });
            table.print();
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
        assertThat(ran).containsExactly("first", "second");
        assertThat(table.failed()).isTrue();
        String text = printed.toString(StandardCharsets.UTF_8);
        assertThat(text)
                .contains(
                        "| first | failed: java.lang.IllegalStateException: nvrtc log line 2 \\|"
                                + " column | FAIL |")
                .contains("| second | fine | ok |")
                .contains("time: first ")
                .contains("time: second ");
    }
}
