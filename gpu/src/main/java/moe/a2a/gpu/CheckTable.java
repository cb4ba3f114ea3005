package moe.a2a.gpu;

import java.util.ArrayList;
import java.util.List;

/** The rows of a check run: printed as they come, and as one table at the end. */
public final class CheckTable {
    private final List<String[]> rows = new ArrayList<>();
    private boolean failed;

    /**
     * Adds a row: {@code check} passed ({@code ok}) or failed, with what it found (on one line,
     * pipes escaped, so an error with a compiler's log keeps the table whole).
     */
    public void row(String check, String result, boolean ok) {
        rows.add(
                new String[] {
                    check, result.replace("\n", " ").replace("|", "\\|"), ok ? "ok" : "FAIL"
                });
        failed |= !ok;
        System.out.println((ok ? "ok   " : "FAIL ") + check + ": " + result);
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
}
