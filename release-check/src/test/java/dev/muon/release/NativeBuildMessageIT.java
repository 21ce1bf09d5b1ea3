package dev.muon.release;

import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The message of muon-core's native build names the actual cause when it cannot run gcc (issue 30, item 10: a wrong
 * {@code -Dgcc=} path used to be reported as "no gcc on PATH"). Each row runs the build step alone, in Maven.
 */
class NativeBuildMessageIT {
    static Stream<Arguments> missingCompilers() {
        String notFound = " was not found (no such file, and no such command on PATH)";
        return Stream.of(
                Arguments.of(List.of("-Dgcc=/nonexistent/gcc"), 0, "[WARNING]", "muon-core: the gcc given by"
                        + " -Dgcc=/nonexistent/gcc" + notFound + "; building WITHOUT the native CPU kernels"),
                Arguments.of(List.of("-Dgcc=no-such-gcc-for-muon"), 0, "[WARNING]", "muon-core: the gcc given by"
                        + " -Dgcc=no-such-gcc-for-muon" + notFound + "; building WITHOUT the native CPU kernels"),
                Arguments.of(List.of("-Dgcc=/nonexistent/gcc", "-Dmuon.native.requireGcc=true"), 1, "[ERROR]",
                        "muon-core: the gcc given by -Dgcc=/nonexistent/gcc" + notFound
                                + ", and -Dmuon.native.requireGcc=true"));
    }

    @ParameterizedTest
    @MethodSource("missingCompilers")
    void nativeBuild_namesTheCause(List<String> options, int exitCode, String level, String message,
                                   @TempDir Path tmp) throws Exception {
        List<String> args = new ArrayList<>(List.of("-o", "-Dmaven.repo.local=" + Outer.localRepository(), "-f",
                Outer.root().resolve("muon-core").resolve("pom.xml").toString(),
                "antrun:run@compile-cpu-kernels"));
        args.addAll(options);
        Outer.Run run = Outer.maven(tmp, tmp.resolve("build.log"), args.toArray(String[]::new));
        assertEquals(exitCode, run.exitCode(), run.output());
        assertTrue(run.output().lines().anyMatch(l -> l.startsWith(level) && l.contains(message)),
                "expected a " + level + " line with '" + message + "' in:\n" + run.output());
    }
}
