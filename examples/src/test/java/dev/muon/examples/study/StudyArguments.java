package dev.muon.examples.study;

import dev.muon.examples.ExampleCli;
import picocli.CommandLine;

/**
 * {@code DocCommandsTest}'s check of a documented {@code MuonStudy} or {@code SecondStudy} command, inside the
 * studies' package.
 */
public final class StudyArguments {
    private StudyArguments() {
    }

    /**
     * Parses and validates the arguments as {@code MuonStudy} would, without running it: the cell, or the model and
     * the plan of a sweep or a timing pass.
     *
     * @param argv the command's arguments, the sub-command first
     * @throws CommandLine.ParameterException if picocli refuses them
     * @throws IllegalArgumentException       if the cell or the plan refuses them
     */
    public static void accept(String[] argv) {
        CommandLine cli = ExampleCli.commandLine(new MuonStudy());
        CommandLine.ParseResult parsed = cli.parseArgs(argv);
        CommandLine sub = parsed.subcommand().commandSpec().commandLine();
        Object command = sub.getCommand();
        if (command instanceof MuonStudy.Cell c) {
            c.cell();
        } else if (command instanceof MuonStudy.Sweep s) {
            s.model.validate(sub);
            s.planOptions.plan(sub, s.model);
        } else if (command instanceof MuonStudy.Timing t) {
            t.model.validate(sub);
            t.planOptions.plan(sub, t.model);
        }
    }

    /**
     * Parses and validates the arguments as {@code SecondStudy} would, without running it.
     *
     * @param argv the command's arguments
     * @throws CommandLine.ParameterException if picocli or the option checks refuse them
     */
    public static void acceptSecond(String[] argv) {
        SecondStudy study = new SecondStudy();
        CommandLine cli = ExampleCli.commandLine(study);
        cli.parseArgs(argv);
        study.validate(cli);
    }
}
