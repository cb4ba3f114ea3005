package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Locale;
import java.util.Set;
import moe.a2a.cli.Main;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParseResult;

/**
 * The moe-a2a CLI as picocli models it, so manifests are checked against the flags, defaults and
 * parsing of the jar they will run rather than against a copy of them.
 */
final class CliModel {
    private CliModel() {}

    /** Configured like Main's own CommandLine: enum values such as --transport=nccl in any case. */
    static CommandLine cli() {
        return new CommandLine(new Main()).setCaseInsensitiveEnumValuesAllowed(true);
    }

    static String defaultOf(String subcommand, String option) {
        return cli().getSubcommands()
                .get(subcommand)
                .getCommandSpec()
                .findOption(option)
                .defaultValue();
    }

    /** The value a subcommand ends up with for {@code name} (the default when not given). */
    static <T> T option(ParseResult parsed, String name, Class<T> type) {
        OptionSpec spec = parsed.commandSpec().findOption(name);
        assertThat(spec).as("moe-a2a %s defines %s", parsed.commandSpec().name(), name).isNotNull();
        return type.cast(spec.getValue());
    }

    /**
     * An enum option in lower case, as manifests and logs spell it; the enum types are
     * package-private.
     */
    static String enumOption(ParseResult parsed, String name) {
        return String.valueOf(option(parsed, name, Object.class)).toLowerCase(Locale.ROOT);
    }

    /**
     * {@code args} (subcommand first, then {@code --flag=value}) checked flag by flag against the
     * subcommand's options, so a misspelt flag is named, then parsed.
     */
    static ParseResult parse(String where, List<String> args) {
        assertThat(args).as("%s: args", where).isNotEmpty();
        CommandLine cli = cli();
        CommandLine sub = cli.getSubcommands().get(args.get(0));
        assertThat(sub)
                .as(
                        "%s: first arg is a subcommand of moe-a2a %s",
                        where, cli.getSubcommands().keySet())
                .isNotNull();
        Set<String> flags = sub.getCommandSpec().optionsMap().keySet();
        for (String arg : args.subList(1, args.size())) {
            assertThat(arg).as("%s: args are written --flag=value", where).startsWith("--");
            String flag = arg.contains("=") ? arg.substring(0, arg.indexOf('=')) : arg;
            assertThat(flags).as("%s: flags of moe-a2a %s", where, args.get(0)).contains(flag);
        }
        try {
            return cli.parseArgs(args.toArray(String[]::new)).subcommand();
        } catch (CommandLine.ParameterException e) {
            throw new AssertionError(
                    where + ": moe-a2a rejects " + args + ": " + e.getMessage(), e);
        }
    }
}
