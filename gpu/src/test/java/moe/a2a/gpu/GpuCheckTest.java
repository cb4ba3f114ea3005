package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** gpu-check's runner: one check's failure is a row, and the checks after it still run. */
class GpuCheckTest {
    @Test
    void shouldRecordAFailedCheckAndRunTheNext() {
        CheckTable table = new CheckTable();
        List<String> ran = new ArrayList<>();
        String text =
                printed(
                        () -> {
                            GpuCheck.timed(
                                    "first",
                                    table,
                                    () -> {
                                        ran.add("first");
                                        throw new IllegalStateException(
                                                "nvrtc log\nline 2 | column");
                                    });
                            GpuCheck.timed(
                                    "second",
                                    table,
                                    () -> {
                                        ran.add("second");
                                        table.row("second", "fine", true);
                                    });
                            table.print();
                        });
        assertThat(ran).containsExactly("first", "second");
        assertThat(table.failed()).isTrue();
        assertThat(text)
                .contains(
                        "| first | failed: java.lang.IllegalStateException: nvrtc log line 2 \\|"
                                + " column | FAIL |")
                .contains("| second | fine | ok |")
                .contains("time: first ")
                .contains("time: second ");
    }

    @Test
    void shouldJoinTheRowsOfChecksRunApartIntoOneTable(@TempDir Path dir) throws Exception {
        Path rows = dir.resolve("rows.tsv");
        List<String> names = GpuCheck.checkNames(List.of());
        assertThat(names).startsWith("probe", "GpuCpuComparison").doesNotHaveDuplicates();
        String printed =
                printed(
                        () -> {
                            CheckTable.savedTo(rows).row("probe", "GPU: 1 device", true);
                            CheckTable.savedTo(rows)
                                    .row("GpuCpuComparison", "worst\tdiff | 3\nrows", false);
                            assertThat(
                                            GpuCheck.run(
                                                    new String[] {"--print-rows", rows.toString()},
                                                    List.of()))
                                    .as("a failed row")
                                    .isEqualTo(1);
                        });
        assertThat(printed)
                .contains("| probe | GPU: 1 device | ok |")
                .contains("| GpuCpuComparison | worst diff \\| 3 rows | FAIL |");
        Path passed = dir.resolve("passed.tsv");
        printed(() -> CheckTable.savedTo(passed).row("probe", "GPU", true));
        assertThat(printed(() -> assertThat(CheckTable.printSaved(passed)).isZero()))
                .contains("| probe | GPU | ok |");
        assertThat(CheckTable.printSaved(dir.resolve("none.tsv")))
                .as("no rows: nothing ran")
                .isEqualTo(1);
        Path torn = dir.resolve("torn.tsv");
        printed(() -> CheckTable.savedTo(torn).row("probe", "GPU", true));
        Files.writeString(torn, "GpuTimings\tpack 1.2 ms", StandardOpenOption.APPEND);
        assertThat(printed(() -> assertThat(CheckTable.printSaved(torn)).isEqualTo(1)))
                .as("a row a JVM cut short left half written")
                .contains("| (torn.tsv) | not a row: GpuTimings pack 1.2 ms | FAIL |");
    }

    @Test
    void shouldRefuseACheckItDoesNotHave() {
        String printed =
                printed(
                        () ->
                                assertThat(
                                                GpuCheck.run(
                                                        new String[] {"--only", "GpuTiming"},
                                                        List.of()))
                                        .isEqualTo(2));
        assertThat(printed).contains("--only: GpuTiming (expected one of [probe, ");
        assertThat(
                        printed(
                                () ->
                                        assertThat(GpuCheck.run(new String[] {"--rows"}, List.of()))
                                                .isEqualTo(2)))
                .contains("--rows needs a value");
        assertThat(
                        printed(
                                () ->
                                        assertThat(GpuCheck.run(new String[] {"--list"}, List.of()))
                                                .isZero()))
                .contains("GpuTimings\n")
                .endsWith(GpuCheck.checkNames(List.of()).getLast() + System.lineSeparator());
    }

    /** What {@code run} prints to standard output and error. */
    private static String printed(Runnable run) {
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        try (PrintStream capture = new PrintStream(printed, true, StandardCharsets.UTF_8)) {
            System.setOut(capture);
            System.setErr(capture);
            run.run();
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
        return printed.toString(StandardCharsets.UTF_8);
    }
}
