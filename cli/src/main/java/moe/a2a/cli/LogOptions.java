package moe.a2a.cli;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.util.ContextInitializer;
import ch.qos.logback.core.joran.spi.JoranException;
import java.util.Locale;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;

/**
 * The log's level and format: {@code --log-level} and {@code --log-format}, or the system
 * properties of the same names that {@code logback.xml} reads. Logback configures itself when the
 * first logger is created, before picocli has parsed anything (the commands' static loggers), so
 * {@link #apply} sets the properties and configures it again when a flag changed them.
 */
final class LogOptions {
    static final String LEVEL_PROP_NAME = "moe.a2a.log.level";
    static final String LEVEL_DEFAULT = "INFO";
    static final String FORMAT_PROP_NAME = "moe.a2a.log.format";
    static final String FORMAT_DEFAULT = "text";

    /** The levels an operator may choose, most verbose first. */
    enum Level {
        TRACE,
        DEBUG,
        INFO,
        WARN,
        ERROR
    }

    /** {@code text}: one line per event; {@code json}: one JSON object per line. */
    enum Format {
        TEXT,
        JSON
    }

    @Option(
            names = "--log-level",
            scope = ScopeType.INHERIT,
            defaultValue = "${sys:" + LEVEL_PROP_NAME + ":-" + LEVEL_DEFAULT + "}",
            description =
                    "Log level: ${COMPLETION-CANDIDATES}; Netty and grpc-java log warnings only (default: ${DEFAULT-VALUE}, or -D"
                            + LEVEL_PROP_NAME
                            + ").")
    Level level;

    @Option(
            names = "--log-format",
            scope = ScopeType.INHERIT,
            defaultValue = "${sys:" + FORMAT_PROP_NAME + ":-" + FORMAT_DEFAULT + "}",
            description =
                    "Log format on stderr: text (one line per event) or json (one object per line) (default: ${DEFAULT-VALUE}, or -D"
                            + FORMAT_PROP_NAME
                            + ").")
    Format format;

    /** Routes java.util.logging (grpc-java's) into SLF4J, once per JVM. */
    static void bridgeJul() {
        if (!SLF4JBridgeHandler.isInstalled()) {
            SLF4JBridgeHandler.removeHandlersForRootLogger();
            SLF4JBridgeHandler.install();
        }
    }

    /** Makes the parsed level and format the ones Logback uses. */
    void apply() {
        String levelName = level.name();
        String formatName = format.name().toLowerCase(Locale.ROOT);
        if (levelName.equals(System.getProperty(LEVEL_PROP_NAME, LEVEL_DEFAULT))
                && formatName.equals(System.getProperty(FORMAT_PROP_NAME, FORMAT_DEFAULT))) {
            return;
        }
        System.setProperty(LEVEL_PROP_NAME, levelName);
        System.setProperty(FORMAT_PROP_NAME, formatName);
        reconfigure();
    }

    /** Reads logback.xml (or {@code -Dlogback.configurationFile}) again with today's properties. */
    static void reconfigure() {
        LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
        context.reset();
        try {
            new ContextInitializer(context).autoConfig();
        } catch (JoranException e) {
            throw new IllegalStateException("logback configuration: " + e.getMessage(), e);
        }
    }
}
