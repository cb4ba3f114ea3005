package moe.a2a.cli;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;

/**
 * Durations on the command line: ISO-8601 ({@code PT10S}) or a number and a unit ({@code 500ms},
 * {@code 2s}, {@code 5m}, {@code 1h}), as operators write them. Stateless.
 */
final class Durations implements CommandLine.ITypeConverter<Duration> {
    private static final Pattern SHORT = Pattern.compile("(\\d+)(ms|s|m|h)");

    @Override
    public Duration convert(String text) {
        return parse(text);
    }

    static Duration parse(String text) {
        Matcher m = SHORT.matcher(text.trim().toLowerCase(Locale.ROOT));
        if (m.matches()) {
            long n = Long.parseLong(m.group(1));
            return switch (m.group(2)) {
                case "ms" -> Duration.ofMillis(n);
                case "s" -> Duration.ofSeconds(n);
                case "m" -> Duration.ofMinutes(n);
                default -> Duration.ofHours(n);
            };
        }
        try {
            return Duration.parse(text.trim());
        } catch (DateTimeParseException e) {
            throw new CommandLine.TypeConversionException(
                    "'"
                            + text
                            + "' is not a duration (expected: e.g. 500ms, 2s, 5m, 1h, or ISO-8601"
                            + " such as PT10S)");
        }
    }
}
