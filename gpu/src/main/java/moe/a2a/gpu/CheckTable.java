package moe.a2a.gpu;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The rows of a check run: printed as they come, and as one table at the end. A table saved to a
 * file appends each row to it as it is added (a line of tab-separated check, result and status), so
 * that the rows of checks run in separate JVMs make one table, and a JVM that dies keeps the rows
 * it had.
 */
public final class CheckTable {
    private final List<String[]> rows = new ArrayList<>();
    private final @Nullable Path saved;
    private boolean failed;

    public CheckTable() {
        this(null);
    }

    private CheckTable(@Nullable Path saved) {
        this.saved = saved;
    }

    /** A table that appends each row to {@code file} as well. */
    public static CheckTable savedTo(Path file) {
        return new CheckTable(file);
    }

    /**
     * Adds a row: {@code check} passed ({@code ok}) or failed, with what it found (on one line,
     * pipes escaped, so an error with a compiler's log keeps the table whole).
     */
    public void row(String check, String result, boolean ok) {
        String[] row = {oneLine(check), oneLine(result).replace("|", "\\|"), ok ? "ok" : "FAIL"};
        rows.add(row);
        failed |= !ok;
        System.out.println((ok ? "ok   " : "FAIL ") + check + ": " + result);
        if (saved != null) {
            try {
                Files.writeString(
                        saved,
                        String.join("\t", row) + "\n",
                        StandardCharsets.UTF_8,
                        StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot save a check's row to " + saved, e);
            }
        }
    }

    private static String oneLine(String text) {
        return text.replace("\r", " ").replace("\n", " ").replace("\t", " ");
    }

    public boolean failed() {
        return failed;
    }

    void print() {
        System.out.println();
        System.out.println("| check | result | status |");
        System.out.println("|---|---|---|");
        for (String[] r : rows) {
            System.out.println("| " + r[0] + " | " + r[1] + " | " + r[2] + " |");
        }
    }

    /**
     * Prints the rows saved in {@code file} as one table; returns 0 when there are rows and every
     * one passed, else 1. A line that is not a row (one a JVM cut short left half written) is a
     * failed row of its own.
     */
    static int printSaved(Path file) {
        List<String> lines;
        try {
            lines =
                    Files.exists(file)
                            ? Files.readAllLines(file, StandardCharsets.UTF_8)
                            : List.of();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the checks' rows from " + file, e);
        }
        CheckTable table = new CheckTable();
        for (String line : lines) {
            String[] row = line.split("\t", -1);
            if (row.length != 3) {
                row =
                        new String[] {
                            "(" + file.getFileName() + ")",
                            "not a row: " + oneLine(line).replace("|", "\\|"),
                            "FAIL"
                        };
            }
            table.rows.add(row);
            table.failed |= !row[2].equals("ok");
        }
        table.print();
        return table.rows.isEmpty() || table.failed ? 1 : 0;
    }
}
