package moe.a2a.cli;

import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Transport;
import moe.a2a.comm.Transports;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** Entry point of the {@code moe-a2a} command. */
@Command(
        name = "moe-a2a",
        mixinStandardHelpOptions = true,
        versionProvider = Main.Version.class,
        description = "Expert-parallel all-to-all for Mixture-of-Experts inference.",
        subcommands = {
            ServeCommand.class,
            ControlPlaneCommand.class,
            WorkerCommand.class,
            ClientCommand.class,
            BenchCommand.class,
            BenchRankCommand.class,
            BenchCollectiveRankCommand.class,
            BenchHostRankCommand.class,
            HealthCommand.class,
            DoctorCommand.class,
            EplbCommand.class,
            CommandLine.HelpCommand.class
        })
public final class Main {

    /** Set once a command returned and the process exits with its status. */
    private static volatile boolean exitingOnItsOwn;

    @Mixin private LogOptions log = new LogOptions();

    public static void main(String[] args) {
        LogOptions.bridgeJul();
        int status = commandLine().execute(args);
        exitingOnItsOwn = true;
        System.exit(status);
    }

    /**
     * Whether the JVM is shutting down because a command returned (its exit status stands), rather
     * than on a signal such as SIGTERM (a requested stop: shutdown hooks exit 0).
     */
    static boolean exitingOnItsOwn() {
        return exitingOnItsOwn;
    }

    /** The CLI as {@link #main} runs it. */
    static CommandLine commandLine() {
        Main main = new Main();
        return new CommandLine(main)
                .setCaseInsensitiveEnumValuesAllowed(true)
                .registerConverter(Transport.class, text -> Transports.parse("transport", text))
                .registerConverter(Duration.class, new Durations())
                .setExecutionExceptionHandler(Main::reportFailure)
                .setExecutionStrategy(
                        parsed -> {
                            main.log.apply();
                            return new CommandLine.RunLast().execute(parsed);
                        });
    }

    /**
     * Expected failures (a refusal, bad input, an unusable setup, a port taken, a server out of
     * reach) print one line naming the command; anything else keeps its stack trace, which is what
     * a bug report needs.
     */
    private static int reportFailure(
            Exception e, CommandLine command, CommandLine.ParseResult parsed) {
        if (e instanceof A2aException
                || e instanceof IllegalArgumentException
                || e instanceof UncheckedIOException
                || e instanceof IOException
                || e instanceof StatusRuntimeException) {
            command.getErr().println("moe-a2a " + command.getCommandName() + ": " + oneLine(e));
            return 1;
        }
        e.printStackTrace(command.getErr());
        return 1;
    }

    /**
     * The failure's message, and its cause's when that says more (a port already taken, a refused
     * connection and its address), in one line.
     */
    static String oneLine(Throwable e) {
        Throwable cause = e.getCause();
        String message = String.valueOf(e.getMessage());
        return cause == null || cause.getMessage() == null || message.contains(cause.getMessage())
                ? message
                : message + ": " + cause.getMessage();
    }

    /** Reads the version from the jar manifest. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = Main.class.getPackage().getImplementationVersion();
            return new String[] {"moe-a2a " + (v == null ? "(development build)" : v)};
        }
    }
}
