package dev.muon.architecture;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two rules of the layering ({@code shared/ARCHITECTURE.md}) that the cycle check alone cannot see. The values every
 * binding shares (the configs, the update recipe, the assignment rules, the buffer declarations, where state lives)
 * stand below the working parts: none reaches a file that works on libtorch tensors, so muon-djl can use them, and a value cannot
 * read a stage's constant (as {@code MuonConfig} once read NorMuon's 0.2 from the normalization stage). And
 * {@code dev.muon.internal} holds only what several packages or modules share: a public class there that one
 * package alone uses belongs beside that package.
 */
class LayeringTest {
    private static final Path ROOT = Path.of("..");
    private static final Path CORE = Path.of("src/main/java");

    /** The bindings-free values: what muon-djl, which never loads libtorch's bindings, runs of muon-core. */
    private static final List<String> VALUES = List.of("dev.muon.MuonConfig", "dev.muon.NorMuonConfig",
            "dev.muon.HyperballConfig", "dev.muon.AdamWConfig", "dev.muon.MuonHyperparameters",
            "dev.muon.UpdateRecipe", "dev.muon.AssignmentRule", "dev.muon.BufferSpec",
            "dev.muon.StateStorage",
            "dev.muon.orthogonalize.CoefficientSchedule", "dev.muon.orthogonalize.NewtonSchulzConfig");

    /**
     * Files that name a libtorch type and that the values may still reach: {@code TorchNatives} loads nothing
     * without JavaCPP (its class check), and {@code NsPrecision}'s {@code scalarType()} is called only by the
     * libtorch binding ({@code NoBytedecoTest} in muon-djl runs the values without bytedeco).
     */
    private static final Set<String> HARMLESS = Set.of("dev.muon.internal.TorchNatives",
            "dev.muon.orthogonalize.NsPrecision");

    @Test
    void values_reachNoFileThatWorksOnLibtorch() {
        Map<String, Set<String>> graph = ImportCycleTest.dependencies(CORE);
        Set<String> libtorch = graph.keySet().stream().filter(f -> source(CORE, f).contains("import org.bytedeco"))
                .collect(Collectors.toCollection(TreeSet::new));
        for (String value : VALUES) {
            assertTrue(graph.containsKey(value), "the scan found " + value);
            Set<String> reached = new TreeSet<>(ImportCycleTest.reachable(graph, value));
            reached.retainAll(libtorch);
            reached.removeAll(HARMLESS);
            assertEquals(Set.of(), reached, value + " reaches files that work on libtorch");
        }
    }

    @Test
    void internal_holdsOnlyWhatSeveralPackagesShare() throws IOException {
        Pattern publicType = Pattern.compile("^public (?:final |abstract )?(?:class|interface|record|enum) (\\w+)",
                Pattern.MULTILINE);
        Path internal = CORE.resolve("dev/muon/internal");
        List<String> shared;
        try (Stream<Path> files = Files.list(internal)) {
            shared = files.map(Path::toFile).map(java.io.File::getName).filter(n -> n.endsWith(".java"))
                    .filter(n -> !n.equals("package-info.java")).map(n -> n.replace(".java", ""))
                    .filter(n -> publicType.matcher(source(internal, n)).find()).sorted().toList();
        }
        assertTrue(shared.size() >= 5, "the scan found internal's public classes: " + shared);
        Map<String, Set<String>> users = new TreeMap<>();
        for (Path module : List.of(ROOT.resolve("muon-core"), ROOT.resolve("muon-cuda"), ROOT.resolve("muon-djl"),
                ROOT.resolve("muon-bench"), ROOT.resolve("examples"))) {
            Path main = module.resolve("src/main/java");
            if (!Files.isDirectory(main)) {
                continue;
            }
            try (Stream<Path> files = Files.walk(main)) {
                for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                    String text = Files.readString(file);
                    String pkg = packageOf(text);
                    if (pkg.equals("dev.muon.internal")) {
                        continue;
                    }
                    for (String name : shared) {
                        if (Pattern.compile("\\b" + name + "\\b").matcher(text).find()) {
                            users.computeIfAbsent(name, k -> new TreeSet<>()).add(module.getFileName() + ":" + pkg);
                        }
                    }
                }
            }
        }
        for (String name : shared) {
            Set<String> packages = users.getOrDefault(name, Set.of());
            assertTrue(packages.size() >= 2, "dev.muon.internal." + name + " is used by " + packages
                    + ": what one package alone uses lives beside it");
        }
    }

    private static String source(Path root, String file) {
        try {
            return Files.readString(root.resolve(file.replace('.', '/') + ".java"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String packageOf(String text) {
        Matcher m = Pattern.compile("^package ([\\w.]+);", Pattern.MULTILINE).matcher(text);
        return m.find() ? m.group(1) : "";
    }
}
