package moe.a2a.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** Durations as operators write them, and as ISO-8601. */
class DurationsTest {

    @Test
    void shouldReadShortFormsAndIso8601() {
        assertThat(Durations.parse("500ms")).isEqualTo(Duration.ofMillis(500));
        assertThat(Durations.parse("2s")).isEqualTo(Duration.ofSeconds(2));
        assertThat(Durations.parse("5m")).isEqualTo(Duration.ofMinutes(5));
        assertThat(Durations.parse("1h")).isEqualTo(Duration.ofHours(1));
        assertThat(Durations.parse("PT10S")).isEqualTo(Duration.ofSeconds(10));
    }

    @Test
    void shouldNameTheFormsWhenTextIsNoDuration() {
        assertThatThrownBy(() -> Durations.parse("10 seconds"))
                .isInstanceOf(CommandLine.TypeConversionException.class)
                .hasMessage(
                        "'10 seconds' is not a duration (expected: e.g. 500ms, 2s, 5m, 1h, or"
                                + " ISO-8601 such as PT10S)");
    }

    @Test
    void shouldTakeShortFormsOnTheCommandLine() {
        StringWriter err = new StringWriter();
        int exit =
                Main.commandLine()
                        .setErr(new PrintWriter(err, true))
                        .execute("health", "--target", "127.0.0.1:1", "--timeout", "300ms");
        assertThat(err.toString()).doesNotContain("not a duration");
        assertThat(exit).as(err.toString()).isEqualTo(2);
    }
}
