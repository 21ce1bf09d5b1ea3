package dev.muon.release;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The complete project of {@code docs/getting-started.md} ("A complete project"), tried as a new user would: its
 * {@code pom.xml}, {@code .mvn/maven.config} and {@code Main.java}, copied from the page, build against the
 * artifacts this build just packaged, and the page's run command runs {@code Main}, on an empty JavaCPP cache. The inner build is offline and private: its local
 * repository is a temporary folder holding our artifacts, and its only remote is the outer build's local repository
 * (as a {@code file:} mirror), so it neither downloads nor installs anything into a shared repository.
 */
class MinimalProjectIT {
    private static final Pattern FENCE = Pattern.compile("```([a-z]*)\\n(.*?)```", Pattern.DOTALL);
    private static final Pattern PLATFORM_JAR = Pattern.compile(
            "-(linux|macosx|windows|android|ios)-[a-z0-9_]+(-gpu)?\\.jar$");

    @Test
    void gettingStartedProject_buildsOffline_andRunsAsPrinted_onAnEmptyJavacppCache(@TempDir Path tmp)
            throws Exception {
        String page = Files.readString(Outer.root().resolve("docs").resolve("getting-started.md"),
                StandardCharsets.UTF_8);
        String pom = block(page, "xml", "<artifactId>muon-bom</artifactId>");
        String mavenConfig = block(page, "", "-Djavacpp.platform=");
        String main = block(page, "java", "package com.example;");
        String command = block(page, "shell", "mvn ").trim();
        Matcher bomVersion = Pattern.compile("<artifactId>muon-bom</artifactId>\\s*<version>([^<]+)</version>")
                .matcher(pom);
        assertTrue(bomVersion.find(), "the page's pom.xml names no muon-bom version");
        assertEquals(Outer.version(), bomVersion.group(1), "the page's pom.xml imports another muon-bom version");

        String platform = Outer.property("muon.javacppPlatform");
        Path project = tmp.resolve("muon-app");
        Files.createDirectories(project.resolve(".mvn"));
        Files.createDirectories(project.resolve("src/main/java/com/example"));
        Files.writeString(project.resolve("pom.xml"), pom, StandardCharsets.UTF_8);
        // The page names linux-x86_64; a build on another host checks the same file for its own platform.
        Files.writeString(project.resolve(".mvn/maven.config"), mavenConfig.replace("linux-x86_64", platform),
                StandardCharsets.UTF_8);
        Files.writeString(project.resolve("src/main/java/com/example/Main.java"), main, StandardCharsets.UTF_8);

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

        // The page's command as a shell runs it: leading NAME=value words go into the environment. Added here:
        // the private repository (offline), and an empty JavaCPP cache for the JVM that runs Main, the state in
        // which a system-wide libtorch crashed the first run.
        Map<String, String> env = new LinkedHashMap<>();
        List<String> words = new ArrayList<>(List.of(command.split("\\s+")));
        while (!words.isEmpty() && words.get(0).matches("[A-Z_]+=.*")) {
            String word = words.remove(0);
            env.put(word.substring(0, word.indexOf('=')), word.substring(word.indexOf('=') + 1));
        }
        assertEquals("mvn", words.remove(0), "the page's run command is not a Maven command: " + command);
        assertEquals(Map.of("OMP_WAIT_POLICY", "PASSIVE", "OPENBLAS_THREAD_TIMEOUT", "4"), env,
                "the page's run command sets another environment: " + command);
        Path cache = tmp.resolve("javacpp-cache");
        env.put("JAVA_TOOL_OPTIONS", "-Dorg.bytedeco.javacpp.cachedir=" + cache);
        List<String> args = new ArrayList<>(List.of("-s", settings.toString(), "-gs", settings.toString(),
                "-Dmaven.repo.local=" + repo));
        args.addAll(words);
        Outer.Run run;
        boolean filled;
        try {
            run = Outer.maven(project, tmp.resolve("run.log"), env, args.toArray(String[]::new));
            try (Stream<Path> files = Files.walk(cache)) {
                filled = files.anyMatch(f -> f.getFileName().toString().equals(System.mapLibraryName("torch_cpu")));
            }
        } finally {
            // JavaCPP links CUDA libraries it finds on the system into the cache; JUnit warns on the console for
            // each link it deletes, so the cache goes here, links as links.
            deleteTree(cache);
        }
        assertEquals(0, run.exitCode(), "the page's project does not build and run with `" + command + "`:\n"
                + run.output());

        Matcher losses = Pattern.compile("step (\\d+), training loss ([0-9.]+)").matcher(run.output());
        List<Double> curve = new ArrayList<>();
        while (losses.find()) {
            curve.add(Double.parseDouble(losses.group(2)));
        }
        assertEquals(4, curve.size(), "no four loss lines in:\n" + run.output());
        assertTrue(curve.get(3) < 0.8 * curve.get(0), "the loss did not fall: " + curve);
        assertTrue(run.output().contains("2 on Muon, 4 on AdamW"), "no assignment table in:\n" + run.output());
        // The environment reached Main's JVM: the optimizer's thread advice stayed silent.
        assertFalse(run.output().contains("OMP_WAIT_POLICY is"), run.output());
        assertFalse(run.output().contains("OPENBLAS_THREAD_TIMEOUT is"), run.output());
        assertTrue(filled, "Main's JVM did not fill the JavaCPP cache at " + cache);

        List<String> foreign = new ArrayList<>();
        for (String group : List.of("org/bytedeco", "dev/muon")) {
            try (Stream<Path> files = Files.walk(repo.resolve(group))) {
                for (Path jar : files.filter(f -> f.toString().endsWith(".jar")).toList()) {
                    String name = jar.getFileName().toString();
                    if (PLATFORM_JAR.matcher(name).find() && !name.contains("-" + platform)) {
                        foreign.add(name);
                    }
                }
            }
        }
        assertEquals(List.of(), foreign, ".mvn/maven.config did not keep other platforms' natives out");
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
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
