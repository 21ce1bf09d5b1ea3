package dev.muon.release;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * What the checks know about the build that runs them (failsafe passes it as system properties), and how they
 * start a Maven of their own.
 */
final class Outer {
    private Outer() {
    }

    static String property(String name) {
        String value = System.getProperty(name);
        if (value == null || value.isBlank()) {
            throw new IllegalStateException("system property " + name + " is not set: run these checks through"
                    + " Maven (mvn verify), whose failsafe configuration in release-check/pom.xml sets it");
        }
        return value;
    }

    static Path root() {
        return Path.of(property("muon.root")).toAbsolutePath().normalize();
    }

    static String version() {
        return property("muon.version");
    }

    static Path localRepository() {
        return Path.of(property("muon.localRepository")).toAbsolutePath();
    }

    /** A packaged artifact of the outer build, which must exist: the reactor built it before this module. */
    static Path artifact(String module, String classifier) {
        String name = module + "-" + version() + (classifier.isEmpty() ? "" : "-" + classifier) + ".jar";
        Path jar = root().resolve(module).resolve("target").resolve(name);
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException(jar + " does not exist: the reactor must package " + module
                    + " before release-check (run mvn verify from the repository root)");
        }
        return jar;
    }

    /** The result of a child process: its exit status and its output (stdout and stderr together). */
    record Run(int exitCode, String output) {
    }

    /** Runs this build's Maven in {@code dir}, batch mode, with the given arguments. */
    static Run maven(Path dir, Path log, String... args) throws IOException, InterruptedException {
        return maven(dir, log, Map.of(), args);
    }

    /** Runs this build's Maven in {@code dir}, batch mode, with the given arguments and extra environment. */
    static Run maven(Path dir, Path log, Map<String, String> env, String... args)
            throws IOException, InterruptedException {
        Path mvn = Path.of(property("muon.mavenHome"), "bin", "mvn");
        List<String> command = new ArrayList<>();
        command.add(mvn.toString());
        command.add("-B");
        command.addAll(List.of(args));
        return run(dir, log, env, command, 480);
    }

    static Run run(Path dir, Path log, List<String> command, long timeoutSeconds)
            throws IOException, InterruptedException {
        return run(dir, log, Map.of(), command, timeoutSeconds);
    }

    static Run run(Path dir, Path log, Map<String, String> env, List<String> command, long timeoutSeconds)
            throws IOException, InterruptedException {
        ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile());
        builder.environment().putAll(env);
        Process process = builder.start();
        if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new IllegalStateException(String.join(" ", command) + " ran over " + timeoutSeconds + " s; output:\n"
                    + Files.readString(log, StandardCharsets.UTF_8));
        }
        return new Run(process.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
    }
}
