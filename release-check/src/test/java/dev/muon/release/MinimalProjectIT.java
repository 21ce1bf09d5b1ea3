package dev.muon.release;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The complete project of {@code docs/getting-started.md} ("A complete Maven project"), tried as a new user would:
 * its {@code pom.xml} and {@code .mvn/maven.config}, copied from the page, build a class that uses muon-core against
 * the artifacts this build just packaged, and the class runs. The inner build is offline and private: its local
 * repository is a temporary folder holding our artifacts, and its only remote is the outer build's local repository
 * (as a {@code file:} mirror), so it neither downloads nor installs anything into a shared repository.
 */
class MinimalProjectIT {
    private static final Pattern FENCE = Pattern.compile("```([a-z]*)\\n(.*?)```", Pattern.DOTALL);
    private static final Pattern PLATFORM_JAR = Pattern.compile(
            "-(linux|macosx|windows|android|ios)-[a-z0-9_]+(-gpu)?\\.jar$");

    /** A Muon step on a matrix that should move toward a target: the loss must fall. */
    private static final String APP = """
            import dev.muon.Muon;
            import dev.muon.MuonConfig;
            import java.util.List;
            import java.util.Locale;
            import org.bytedeco.javacpp.PointerScope;
            import org.bytedeco.pytorch.Tensor;
            import org.bytedeco.pytorch.global.torch;

            public class App {
                public static void main(String[] args) {
                    try (PointerScope scope = new PointerScope()) {
                        torch.manual_seed(7);
                        Tensor target = torch.randn(32, 16);
                        Tensor w = torch.zeros(32, 16).requires_grad_(true);
                        Muon muon = Muon.of(List.of(w), MuonConfig.defaults().withLr(0.2));
                        double first = Double.NaN;
                        double last = Double.NaN;
                        for (int step = 0; step < 40; step++) {
                            try (PointerScope inner = new PointerScope()) {
                                muon.zeroGrad();
                                Tensor loss = w.sub(target).square().sum();
                                loss.backward();
                                muon.step();
                                last = loss.item_double();
                                if (step == 0) {
                                    first = last;
                                }
                            }
                        }
                        System.out.println(String.format(Locale.ROOT, "muon-app loss %.6f -> %.6f", first, last));
                    }
                }
            }
            """;

    @Test
    void gettingStartedProject_buildsOffline_andRuns(@TempDir Path tmp) throws Exception {
        String page = Files.readString(Outer.root().resolve("docs").resolve("getting-started.md"),
                StandardCharsets.UTF_8);
        String pom = block(page, "xml", "<artifactId>muon-bom</artifactId>");
        String mavenConfig = block(page, "", "-Djavacpp.platform=");
        Matcher bomVersion = Pattern.compile("<artifactId>muon-bom</artifactId>\\s*<version>([^<]+)</version>")
                .matcher(pom);
        assertTrue(bomVersion.find(), "the page's pom.xml names no muon-bom version");
        assertEquals(Outer.version(), bomVersion.group(1), "the page's pom.xml imports another muon-bom version");

        String platform = Outer.property("muon.javacppPlatform");
        Path project = tmp.resolve("muon-app");
        Files.createDirectories(project.resolve(".mvn"));
        Files.createDirectories(project.resolve("src/main/java"));
        Files.writeString(project.resolve("pom.xml"), pom, StandardCharsets.UTF_8);
        // The page names linux-x86_64; a build on another host checks the same file for its own platform.
        Files.writeString(project.resolve(".mvn/maven.config"), mavenConfig.replace("linux-x86_64", platform),
                StandardCharsets.UTF_8);
        Files.writeString(project.resolve("src/main/java/App.java"), APP, StandardCharsets.UTF_8);

        Path repo = tmp.resolve("repo");
        install(repo, "muon-parent", Outer.root().resolve("pom.xml"), null);
        install(repo, "muon-bom", Outer.root().resolve("muon-bom").resolve("pom.xml"), null);
        install(repo, "muon-core", Outer.root().resolve("muon-core").resolve("pom.xml"),
                Outer.artifact("muon-core", ""));
        Path settings = tmp.resolve("settings.xml");
        Files.writeString(settings, """
                <settings>
                  <mirrors>
                    <mirror>
                      <id>outer-build</id>
                      <mirrorOf>*</mirrorOf>
                      <url>%s</url>
                    </mirror>
                  </mirrors>
                </settings>
                """.formatted(Outer.localRepository().toUri()), StandardCharsets.UTF_8);

        Outer.Run build = Outer.maven(project, tmp.resolve("build.log"), "-q", "-s", settings.toString(), "-gs",
                settings.toString(), "-Dmaven.repo.local=" + repo, "compile");
        assertEquals(0, build.exitCode(), "the page's project does not build:\n" + build.output());

        List<String> classPath = new ArrayList<>();
        classPath.add(project.resolve("target/classes").toString());
        List<String> foreign = new ArrayList<>();
        for (String group : List.of("org/bytedeco", "dev/muon")) {
            try (Stream<Path> files = Files.walk(repo.resolve(group))) {
                for (Path jar : files.filter(f -> f.toString().endsWith(".jar")).toList()) {
                    String name = jar.getFileName().toString();
                    if (PLATFORM_JAR.matcher(name).find() && !name.contains("-" + platform)) {
                        foreign.add(name);
                    }
                    classPath.add(jar.toString());
                }
            }
        }
        assertEquals(List.of(), foreign, ".mvn/maven.config did not keep other platforms' natives out");

        Path javaExe = Path.of(System.getProperty("java.home"), "bin", "java");
        Outer.Run run = Outer.run(project, tmp.resolve("run.log"), List.of(javaExe.toString(), "-cp",
                String.join(java.io.File.pathSeparator, classPath), "App"), 300);
        assertEquals(0, run.exitCode(), "the page's project does not run:\n" + run.output());
        Matcher losses = Pattern.compile("muon-app loss ([0-9.]+) -> ([0-9.]+)").matcher(run.output());
        assertTrue(losses.find(), "no loss line in:\n" + run.output());
        assertTrue(Double.parseDouble(losses.group(2)) < 0.5 * Double.parseDouble(losses.group(1)),
                "Muon did not reduce the loss: " + losses.group());
    }

    /** The one fenced block of that language whose text contains {@code marker}. */
    private static String block(String page, String language, String marker) {
        List<String> found = new ArrayList<>();
        Matcher m = FENCE.matcher(page);
        while (m.find()) {
            if (m.group(1).equals(language) && m.group(2).contains(marker)) {
                found.add(m.group(2));
            }
        }
        assertEquals(1, found.size(), "getting-started.md must have exactly one ```" + language + " block with "
                + marker);
        return found.get(0);
    }

    /** Lays a POM (and jar) out as {@code mvn install} would, without touching any shared repository. */
    private static void install(Path repo, String artifactId, Path pom, Path jar) throws IOException {
        String version = Outer.version();
        Path dir = repo.resolve("dev/muon").resolve(artifactId).resolve(version);
        Files.createDirectories(dir);
        Files.copy(pom, dir.resolve(artifactId + "-" + version + ".pom"));
        if (jar != null) {
            Files.copy(jar, dir.resolve(artifactId + "-" + version + ".jar"));
        }
    }
}
