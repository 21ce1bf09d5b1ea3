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
 * Rules of the layering ({@code shared/ARCHITECTURE.md}) that the cycle check alone cannot see. The values every
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

    /**
     * No package imports a package that imports it, directly or through others: the packages stand on floors. One
     * package stands on two: {@code dev.muon} holds the values the state codecs read (the configs, the update recipe,
     * the buffer declarations) below {@code dev.muon.state}, and the optimizers and their working parts, which
     * use the state, above it. Its values' floor is what the other packages reach of it, so a value that reads a
     * codec (as {@code UpdateRecipe} read {@code state.BufferSpec}) closes a cycle, and so does a codec that reads
     * an optimizer.
     */
    @Test
    void noPackageImportsAPackageThatImportsIt() {
        Map<String, Set<String>> graph = ImportCycleTest.dependencies(CORE);
        Set<String> values = new TreeSet<>();
        for (Map.Entry<String, Set<String>> e : graph.entrySet()) {
            if (!packageOfFile(e.getKey()).equals("dev.muon")) {
                e.getValue().stream().filter(f -> packageOfFile(f).equals("dev.muon")).forEach(values::add);
            }
        }
        for (String value : List.copyOf(values)) {
            ImportCycleTest.reachable(graph, value).stream().filter(f -> packageOfFile(f).equals("dev.muon"))
                    .forEach(values::add);
        }
        assertTrue(values.contains("dev.muon.MuonConfig") && !values.contains("dev.muon.Muon"),
                "the scan found dev.muon's values: " + values);
        Map<String, Set<String>> floors = new TreeMap<>();
        Map<String, Set<String>> arrows = new TreeMap<>();
        for (Map.Entry<String, Set<String>> e : graph.entrySet()) {
            String from = floorOf(e.getKey(), values);
            floors.computeIfAbsent(from, k -> new TreeSet<>());
            for (String target : e.getValue()) {
                String to = floorOf(target, values);
                if (!to.equals(from)) {
                    floors.get(from).add(to);
                    arrows.computeIfAbsent(from + " -> " + to, k -> new TreeSet<>())
                            .add(simpleName(e.getKey()) + " -> " + simpleName(target));
                }
            }
        }
        assertTrue(floors.size() >= 7, "the scan found muon-core's packages: " + floors.keySet());
        List<Set<String>> cycles = ImportCycleTest.cycles(floors);
        Map<String, Set<String>> back = new TreeMap<>();
        for (Set<String> cycle : cycles) {
            for (String from : cycle) {
                for (String to : floors.get(from)) {
                    if (cycle.contains(to)) {
                        back.put(from + " -> " + to, arrows.get(from + " -> " + to));
                    }
                }
            }
        }
        assertEquals(Map.of(), back, "packages that import each other, directly or through others");
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
                ROOT.resolve("muon-spark"),
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

    private static String packageOfFile(String file) {
        return file.substring(0, file.lastIndexOf('.'));
    }

    private static String simpleName(String file) {
        return file.substring(file.lastIndexOf('.') + 1);
    }

    /** A file's floor: its package, or dev.muon's values' own floor below the state codecs. */
    private static String floorOf(String file, Set<String> values) {
        return values.contains(file) ? "dev.muon (values)" : packageOfFile(file);
    }

    private static String packageOf(String text) {
        Matcher m = Pattern.compile("^package ([\\w.]+);", Pattern.MULTILINE).matcher(text);
        return m.find() ? m.group(1) : "";
    }
}
