package dev.muon.examples;

import org.bytedeco.javacpp.Loader;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.util.Properties;

/**
 * The command line of every example: the same options and the same failures. A usage error (an unknown option, a
 * value that does not parse or breaks its rule) is one line on stderr and exit status 2; a {@link DataError} (data
 * that is missing or damaged, an output folder that cannot be made) one line and status 1; {@code --debug} adds
 * the stack trace. {@code --version} prints the examples' version, {@code --help} the options. Anything else that
 * fails is a bug, reported with its stack trace, status 1.
 */
public final class ExampleCli {
    /** Exit status of a usage error, as picocli and most Unix tools use it. */
    public static final int USAGE = 2;
    /** Exit status of a {@link DataError}. */
    public static final int DATA = 1;
    private static final String DEBUG = "--debug";

    private ExampleCli() {
    }

    /**
     * The parser of an example, with {@code --debug}, the version and the one-line failures.
     *
     * @param command the picocli command object
     * @return its command line
     */
    public static CommandLine commandLine(Object command) {
        CommandLine cli = new CommandLine(command).setCaseInsensitiveEnumValuesAllowed(true);
        cli.getCommandSpec().addOption(OptionSpec.builder(DEBUG)
                .description("print the stack trace of an error, not only its one line").build());
        cli.getCommandSpec().versionProvider(() -> new String[] {cli.getCommandName() + " " + version()});
        cli.setParameterExceptionHandler((e, args) -> {
            PrintWriter err = e.getCommandLine().getErr();
            err.println(name(e.getCommandLine()) + ": " + oneLine(e.getMessage())
                    + " (--help lists the options)");
            if (debug(args)) {
                e.printStackTrace(err);
            }
            err.flush();
            return USAGE;
        });
        cli.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
            PrintWriter err = commandLine.getErr();
            boolean debug = parseResult.hasMatchedOption(DEBUG);
            if (e instanceof DataError) {
                err.println(name(commandLine) + ": " + oneLine(e.getMessage()));
                if (debug) {
                    e.printStackTrace(err);
                }
                err.flush();
                return DATA;
            }
            throw e;
        });
        return cli;
    }

    /**
     * Parses, runs and exits with the command's status.
     *
     * @param command the picocli command object
     * @param args    the command line
     */
    public static void main(Object command, String[] args) {
        readyLibtorchNatives();
        System.exit(commandLine(command).execute(args));
    }

    /**
     * The first statement of {@code docs/getting-started.md}'s {@code Main}: libtorch's main native library into
     * JavaCPP's cache before anything loads libtorch, so that a system-wide libtorch is never loaded beside ours
     * (the examples set the thread count, and so load libtorch, before they touch any class of muon-core's).
     */
    private static void readyLibtorchNatives() {
        try {
            Loader.cacheResource(Loader.class, "/org/bytedeco/pytorch/" + Loader.getPlatform() + "/"
                    + System.mapLibraryName("torch_cpu"));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot put libtorch_cpu into JavaCPP's cache", e);
        }
    }

    /** The command's name, with its parent's for a sub-command: {@code MuonStudy cell}. */
    private static String name(CommandLine cli) {
        return cli.getCommandSpec().qualifiedName();
    }

    /** A picocli message, which may quote a value with a line break in it, as one line. */
    private static String oneLine(String message) {
        return String.valueOf(message).replaceAll("\\s*\\R\\s*", " ").trim();
    }

    private static boolean debug(String[] args) {
        for (String arg : args) {
            if (arg.equals(DEBUG)) {
                return true;
            }
        }
        return false;
    }

    /**
     * The examples' version, from the Maven build.
     *
     * @return the version, such as {@code 0.1.0-SNAPSHOT}
     * @throws UncheckedIOException if the build did not write it
     */
    static String version() {
        try (InputStream in = ExampleCli.class.getResourceAsStream("version.properties")) {
            if (in == null) {
                throw new UncheckedIOException(new IOException("version.properties is missing beside "
                        + ExampleCli.class.getName() + ": build the examples with Maven"));
            }
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the examples' version.properties", e);
        }
    }
}
