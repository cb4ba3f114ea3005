package moe.a2a.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** Entry point of the {@code moe-a2a} command. */
@Command(
        name = "moe-a2a",
        mixinStandardHelpOptions = true,
        versionProvider = Main.Version.class,
        description = "Expert-parallel all-to-all for Mixture-of-Experts inference.",
        subcommands = {ServeCommand.class, ControlPlaneCommand.class, WorkerCommand.class, ClientCommand.class,
            BenchCommand.class, BenchRankCommand.class, HealthCommand.class, CommandLine.HelpCommand.class})
public final class Main {

    public static void main(String[] args) {
        System.exit(new CommandLine(new Main()).setCaseInsensitiveEnumValuesAllowed(true).execute(args));
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
