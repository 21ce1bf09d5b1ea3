package dev.muon.examples.study;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The CPU a study row names: the model name with its family and model numbers, which tell generations apart. */
class StudyMachineTest {
    @TempDir
    Path dir;

    static Stream<Arguments> cpuinfoFiles() {
        return Stream.of(
                Arguments.of("a virtual machine's brand-only name gets its numbers",
                        "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n"
                                + "model name\t: AMD EPYC\nstepping\t: 1\n",
                        "AMD EPYC family 26 model 2"),
                Arguments.of("the first processor's block only",
                        "processor\t: 0\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n\n"
                                + "processor\t: 1\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: Other\n",
                        "AMD EPYC family 25 model 17"),
                Arguments.of("commas and quotes cleaned for the CSV",
                        "cpu family\t: 6\nmodel\t\t: 85\nmodel name\t: Intel(R) Xeon(R) \"Gold\", 6148\n",
                        "Intel(R) Xeon(R) Gold 6148 family 6 model 85"),
                Arguments.of("a model name without numbers stays as it is",
                        "model name\t: Some CPU\n", "Some CPU"),
                Arguments.of("no model name at all", "processor\t: 0\nBogoMIPS\t: 50.00\n", "unknown"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cpuinfoFiles")
    void cpu_namesTheModelWithItsFamilyAndModel(String what, String cpuinfo, String expected) throws IOException {
        Path file = dir.resolve("cpuinfo");
        Files.writeString(file, cpuinfo, StandardCharsets.UTF_8);
        assertEquals(expected, StudyMachine.cpu(file));
    }

    @Test
    void cpu_ofAMissingFile_isUnknown() {
        assertEquals("unknown", StudyMachine.cpu(dir.resolve("absent")));
    }
}
