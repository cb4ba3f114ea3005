package moe.a2a.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;

/**
 * The shipped logback.xml (surefire points {@code logback.configurationFile} at it) as {@code
 * --log-level} and {@code --log-format} select it: one line per event on stderr.
 */
@Timeout(60)
class LogOptionsTest {
    private static final Logger LOG = LoggerFactory.getLogger(LogOptionsTest.class);

    private final ByteArrayOutputStream err = new ByteArrayOutputStream();
    private final PrintStream originalErr = System.err;

    @BeforeEach
    void captureStderr() {
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    @AfterEach
    void restoreDefaults() {
        System.setErr(originalErr);
        System.clearProperty(LogOptions.LEVEL_PROP_NAME);
        System.clearProperty(LogOptions.FORMAT_PROP_NAME);
        LogOptions.reconfigure();
    }

    @Test
    void shouldWriteOneJsonObjectPerEventWhenLogFormatIsJson() {
        assertThat(run("--log-format", "json", "help")).isZero();
        LogOptions.bridgeJul();

        LOG.info("served {} requests", 3);
        LOG.debug("below the level");
        LoggerFactory.getLogger("io.netty.buffer.PoolArena").info("library chatter");
        java.util.logging.Logger.getLogger("io.grpc.internal.Test").info("library chatter");
        java.util.logging.Logger.getLogger("io.grpc.internal.Test").warning("channel down");

        List<String> lines = lines();
        assertThat(lines).hasSize(2);
        JsonObject served = JsonParser.parseString(lines.get(0)).getAsJsonObject();
        assertThat(served.get("level").getAsString()).isEqualTo("INFO");
        assertThat(served.get("loggerName").getAsString())
                .isEqualTo(LogOptionsTest.class.getName());
        assertThat(served.get("message").getAsString()).isEqualTo("served {} requests");
        assertThat(served.get("formattedMessage").getAsString()).isEqualTo("served 3 requests");
        assertThat(served.get("timestamp").getAsLong()).isPositive();
        JsonObject grpc = JsonParser.parseString(lines.get(1)).getAsJsonObject();
        assertThat(grpc.get("level").getAsString()).isEqualTo("WARN");
        assertThat(grpc.get("loggerName").getAsString()).isEqualTo("io.grpc.internal.Test");
        assertThat(grpc.get("formattedMessage").getAsString()).isEqualTo("channel down");
    }

    @Test
    void shouldWriteOneTimestampedLineWithoutStackTraceWhenNoExceptionIsPassed() {
        assertThat(run("help")).isZero();

        LOG.info("served {} requests", 3);
        LOG.warn("peer {} failed", 2, new IllegalStateException("boom"));

        List<String> lines = lines();
        assertThat(lines.get(0))
                .matches(
                        "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}(Z|[+-]\\d\\d:\\d\\d)"
                                + " INFO  \\[[^]]+\\] LogOptionsTest - served 3 requests");
        assertThat(lines.get(1))
                .endsWith(" WARN  [" + threadName() + "] LogOptionsTest - peer 2 failed");
        assertThat(lines.get(2)).isEqualTo("java.lang.IllegalStateException: boom");
        assertThat(lines.subList(3, lines.size())).allMatch(l -> l.startsWith("\t"));
    }

    @Test
    void shouldLogDebugButNotLibraryDebugWhenLogLevelIsDebugAfterTheCommand() {
        assertThat(run("eplb", "--help", "--log-level", "debug")).isZero();

        LOG.debug("step {} planned", 7);
        LoggerFactory.getLogger("io.netty.buffer.PoolArena").debug("library chatter");

        assertThat(lines()).singleElement().asString().endsWith("LogOptionsTest - step 7 planned");
    }

    @Test
    void shouldNameTheFlagWhenTheLogLevelIsUnknown() {
        StringWriter usageErr = new StringWriter();
        int status =
                Main.commandLine()
                        .setOut(new PrintWriter(new StringWriter()))
                        .setErr(new PrintWriter(usageErr, true))
                        .execute("--log-level", "loud", "help");

        assertThat(status).isEqualTo(2);
        assertThat(usageErr.toString().lines().findFirst())
                .hasValueSatisfying(
                        l -> assertThat(l).contains("'--log-level'").contains("'loud'"));
    }

    private static int run(String... args) {
        CommandLine cli = Main.commandLine().setOut(new PrintWriter(new StringWriter()));
        return cli.execute(args);
    }

    private List<String> lines() {
        return err.toString(StandardCharsets.UTF_8).lines().toList();
    }

    private static String threadName() {
        return Thread.currentThread().getName();
    }
}
