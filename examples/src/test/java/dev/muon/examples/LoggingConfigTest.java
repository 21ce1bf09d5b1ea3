package dev.muon.examples;

import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The {@code logging.properties} of {@code docs/getting-started.md} ("Logging") silences the assignment table and
 * keeps our warnings (issue 30, item 3: the single line {@code dev.muon.level = WARNING} the page used to give, as
 * a file of its own, silenced the warnings too). Each row starts a JVM with a configuration file and reads its
 * console.
 */
class LoggingConfigTest {
    private static final Pattern PROPERTIES = Pattern.compile("```properties\\n(.*?)```", Pattern.DOTALL);
    private static final String TABLE = "MuonAdamW parameter assignment";
    private static final String WARNING = "OMP_WAIT_POLICY is not set";

    static String documented() throws Exception {
        String page = Files.readString(Path.of("..", "docs", "getting-started.md"), StandardCharsets.UTF_8);
        Matcher m = PROPERTIES.matcher(page);
        assertTrue(m.find(), "getting-started.md has no ```properties block");
        String file = m.group(1);
        assertTrue(!m.find(), "getting-started.md has more than one ```properties block");
        return file;
    }

    static Stream<Arguments> configurations() throws Exception {
        return Stream.of(
                Arguments.of("the page's file", documented(), false, true),
                // What a file of the one line does: it replaces the JDK's defaults, console handler included.
                Arguments.of("the line alone", "dev.muon.level = WARNING\n", false, false));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("configurations")
    void configuration_decidesWhatReachesTheConsole(String name, String properties, boolean table, boolean warning,
                                                   @TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("logging.properties"), properties, StandardCharsets.UTF_8);
        Path log = dir.resolve("console.log");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder builder = new ProcessBuilder(java, "-Xmx512m", "-Djava.util.logging.config.file=" + file,
                "-cp", System.getProperty("java.class.path"), LoggingProbe.class.getName());
        builder.environment().remove("OMP_WAIT_POLICY");
        builder.environment().put("OMP_NUM_THREADS", "1");
        builder.redirectErrorStream(true);
        builder.redirectOutput(log.toFile());
        Process probe = builder.start();
        assertTrue(probe.waitFor(120, TimeUnit.SECONDS), "the probe did not finish");
        String console = Files.readString(log, StandardCharsets.UTF_8);
        assertEquals(0, probe.exitValue(), console);
        assertTrue(console.contains("built, "), console);
        assertEquals(List.of(table, warning), List.of(console.contains(TABLE), console.contains(WARNING)),
                "[assignment table shown, warning shown] with " + name + ":\n" + console);
    }
}
