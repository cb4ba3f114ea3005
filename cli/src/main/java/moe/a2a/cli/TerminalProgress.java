package moe.a2a.cli;

import java.util.Locale;

/** A progress bar on the terminal's stderr; nothing when output is not a terminal. */
final class TerminalProgress {
    private static final int BAR_WIDTH = 30;

    private TerminalProgress() {}

    /** Shows {@code done} of {@code total} runs, {@code current} running. */
    static void show(int done, int total, String current) {
        if (System.console() != null) {
            int filled = done * BAR_WIDTH / Math.max(1, total);
            System.err.printf(
                    Locale.ROOT,
                    "\r[%s%s] %d/%d running %s",
                    "#".repeat(filled),
                    " ".repeat(BAR_WIDTH - filled),
                    done,
                    total,
                    current);
            System.err.flush();
        }
    }

    /** Blanks the bar's line. */
    static void clear() {
        if (System.console() != null) {
            System.err.print("\r" + " ".repeat(BAR_WIDTH + 60) + "\r");
            System.err.flush();
        }
    }
}
