package moe.a2a.cli;

import java.util.Locale;

/** Sizes in bytes as nccl-tests takes them: a whole number with an optional K, M or G (1024). */
final class ByteSize {
    private ByteSize() {}

    /** {@code text} in bytes, in {@code [1, max]}; an error names {@code field}. */
    static long parse(String field, String text, long max) {
        String t = text.trim().toUpperCase(Locale.ROOT);
        if (t.endsWith("B")) {
            t = t.substring(0, t.length() - 1);
        }
        int shift = 0;
        if (!t.isEmpty()) {
            switch (t.charAt(t.length() - 1)) {
                case 'K' -> shift = 10;
                case 'M' -> shift = 20;
                case 'G' -> shift = 30;
                default -> shift = 0;
            }
        }
        if (shift != 0) {
            t = t.substring(0, t.length() - 1);
        }
        long value = -1;
        if (!t.isEmpty() && t.chars().allMatch(Character::isDigit) && t.length() <= 12) {
            value = Long.parseLong(t) << shift;
        }
        if (value < 1 || value > max) {
            throw new IllegalArgumentException(
                    field
                            + ": "
                            + text
                            + " (expected: a size in bytes from 1 to "
                            + label(max)
                            + ", a whole number with an optional K, M or G: 8, 64K, 64M)");
        }
        return value;
    }

    /** {@code bytes} as nccl-tests would write it: 64M, 8K, 100. */
    static String label(long bytes) {
        if (bytes >= 1L << 30 && bytes % (1L << 30) == 0) {
            return (bytes >> 30) + "G";
        }
        if (bytes >= 1L << 20 && bytes % (1L << 20) == 0) {
            return (bytes >> 20) + "M";
        }
        if (bytes >= 1L << 10 && bytes % (1L << 10) == 0) {
            return (bytes >> 10) + "K";
        }
        return Long.toString(bytes);
    }
}
