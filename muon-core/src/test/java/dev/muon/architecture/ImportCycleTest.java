package dev.muon.architecture;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
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
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The layering of muon-core, drawn from its sources: a file depends on another when it imports it or, in the same
 * package, names it outside comments and string literals. Every arrow must point down: no file may depend on a
 * file that depends on it, directly or through others (see {@code shared/ARCHITECTURE.md}). A source scan rather
 * than ArchUnit: the rule is about files, and this keeps muon-core's test class path to JUnit and libtorch.
 */
class ImportCycleTest {
    private static final Path SOURCES = Path.of("src/main/java");
    private static final Pattern IMPORT = Pattern.compile("^import\\s+(?:static\\s+)?(dev\\.muon\\.[\\w.]+?)"
            + "(?:\\.[a-z_]\\w*|\\.\\*)?;", Pattern.MULTILINE);
    private static final Pattern WORD = Pattern.compile("\\b[A-Z]\\w*\\b");

    @Test
    void noFileDependsOnAFileThatDependsOnIt() {
        Map<String, Set<String>> graph = dependencies(SOURCES);
        assertTrue(graph.size() > 40, "the scan found muon-core's sources: " + graph.size() + " files");
        List<Set<String>> cycles = cycles(graph);
        assertEquals(List.of(), cycles, "files that depend on each other, directly or through others");
    }

    @Test
    void stateCodecs_sitBelowTheOptimizers() {
        Map<String, Set<String>> graph = dependencies(SOURCES);
        for (String codec : List.of("dev.muon.state.CheckpointFile", "dev.muon.state.TorchStateFile",
                "dev.muon.state.StateFit")) {
            Set<String> below = reachable(graph, codec);
            assertFalse(below.contains("dev.muon.MuonAdamW"), codec + " reaches MuonAdamW through " + below);
            assertFalse(below.contains("dev.muon.Muon"), codec + " reaches Muon through " + below);
        }
        assertTrue(reachable(graph, "dev.muon.MuonAdamW").contains("dev.muon.state.CheckpointFile"),
                "MuonAdamW uses CheckpointFile");
    }

    @Test
    void schedules_dependOnNoOptimizer() {
        Map<String, Set<String>> graph = dependencies(SOURCES);
        List<String> schedules = graph.keySet().stream().filter(f -> f.startsWith("dev.muon.schedule.")).toList();
        assertTrue(schedules.contains("dev.muon.schedule.LrScheduler"), "the scan found the schedules: " + schedules);
        for (String schedule : schedules) {
            Set<String> below = reachable(graph, schedule);
            assertTrue(below.stream().allMatch(f -> f.startsWith("dev.muon.schedule.")
                    || f.startsWith("dev.muon.internal.")), schedule + " reaches beyond schedule and internal: "
                    + below);
        }
    }

    @Test
    void byteLevelReaders_importNoStateOrOptimizer() {
        Map<String, Set<String>> graph = dependencies(SOURCES);
        // The byte layer beside the codecs, package-private in dev.muon.state: it reaches nothing but itself and
        // what the modules share.
        Set<String> byteLayer = Set.of("dev.muon.state.Safetensors", "dev.muon.state.TorchLoad",
                "dev.muon.state.WeightsOnlyUnpickler", "dev.muon.state.Json", "dev.muon.state.PickleValues",
                "dev.muon.state.TensorBytes", "dev.muon.state.FormatException", "dev.muon.state.AtomicFile",
                "dev.muon.state.TorchSave", "dev.muon.state.TensorKind", "dev.muon.state.TensorIo");
        for (String reader : List.of("dev.muon.state.Safetensors", "dev.muon.state.TorchLoad",
                "dev.muon.state.WeightsOnlyUnpickler", "dev.muon.state.Json")) {
            Set<String> below = reachable(graph, reader);
            assertTrue(below.stream().allMatch(f -> f.startsWith("dev.muon.internal.") || byteLayer.contains(f)),
                    reader + " reaches beyond the byte layer and internal: " + below);
        }
    }

    @Test
    void theScan_findsACycle_whenOneIsThere() {
        Map<String, Set<String>> graph = new HashMap<>();
        graph.put("a.A", Set.of("a.B"));
        graph.put("a.B", Set.of("a.C"));
        graph.put("a.C", Set.of("a.A"));
        graph.put("a.D", Set.of("a.A"));
        assertEquals(List.of(Set.of("a.A", "a.B", "a.C")), cycles(graph));
    }

    @Test
    void theScan_ignoresNamesInCommentsAndStrings(@org.junit.jupiter.api.io.TempDir Path dir) throws IOException {
        Path pkg = Files.createDirectories(dir.resolve("dev/muon"));
        Files.writeString(pkg.resolve("Alpha.java"), "package dev.muon;\n/** {@link Beta} */\nclass Alpha {\n"
                + "  // Beta\n  String s = \"Beta\";\n  Gamma g;\n}\n");
        Files.writeString(pkg.resolve("Beta.java"), "package dev.muon;\nclass Beta { Alpha a; }\n");
        Files.writeString(pkg.resolve("Gamma.java"), "package dev.muon;\nclass Gamma { }\n");
        Map<String, Set<String>> graph = dependencies(dir);
        assertEquals(Set.of("dev.muon.Gamma"), graph.get("dev.muon.Alpha"));
        assertEquals(Set.of("dev.muon.Alpha"), graph.get("dev.muon.Beta"));
    }

    /** File (as its top-level class name) → the files it depends on. */
    static Map<String, Set<String>> dependencies(Path root) {
        Map<String, String> code = new TreeMap<>();
        try (Stream<Path> files = Files.walk(root)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).collect(Collectors.toList())) {
                String name = root.relativize(file).toString().replace('/', '.').replace(".java", "");
                if (!name.endsWith("package-info")) {
                    code.put(name, stripCommentsAndStrings(Files.readString(file)));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Map<String, Set<String>> graph = new TreeMap<>();
        for (Map.Entry<String, String> e : code.entrySet()) {
            String self = e.getKey();
            String pkg = self.substring(0, self.lastIndexOf('.'));
            Set<String> deps = new TreeSet<>();
            Matcher imports = IMPORT.matcher(e.getValue());
            while (imports.find()) {
                String target = topLevel(imports.group(1), code.keySet());
                if (target != null) {
                    deps.add(target);
                }
            }
            Matcher words = WORD.matcher(e.getValue());
            while (words.find()) {
                String sibling = pkg + "." + words.group();
                if (code.containsKey(sibling)) {
                    deps.add(sibling);
                }
            }
            deps.remove(self);
            graph.put(self, deps);
        }
        return graph;
    }

    /** The file an imported name lives in: the longest prefix that is a file (nested classes live in theirs). */
    private static String topLevel(String imported, Set<String> files) {
        String name = imported;
        while (name.contains(".")) {
            if (files.contains(name)) {
                return name;
            }
            name = name.substring(0, name.lastIndexOf('.'));
        }
        return null;
    }

    /** Blanks out comments, string and character literals, keeping everything else (and the line breaks). */
    static String stripCommentsAndStrings(String source) {
        StringBuilder out = new StringBuilder(source.length());
        int i = 0;
        while (i < source.length()) {
            char c = source.charAt(i);
            if (source.startsWith("//", i)) {
                while (i < source.length() && source.charAt(i) != '\n') {
                    i++;
                }
            } else if (source.startsWith("/*", i)) {
                int end = source.indexOf("*/", i + 2);
                i = end < 0 ? source.length() : end + 2;
                out.append(' ');
            } else if (source.startsWith("\"\"\"", i)) {
                int end = source.indexOf("\"\"\"", i + 3);
                i = end < 0 ? source.length() : end + 3;
                out.append("\"\"");
            } else if (c == '"' || c == '\'') {
                i++;
                while (i < source.length() && source.charAt(i) != c) {
                    i += source.charAt(i) == '\\' ? 2 : 1;
                }
                i++;
                out.append(c).append(c);
            } else {
                out.append(c);
                i++;
            }
        }
        return out.toString();
    }

    static Set<String> reachable(Map<String, Set<String>> graph, String from) {
        Set<String> seen = new TreeSet<>();
        Deque<String> todo = new ArrayDeque<>(graph.getOrDefault(from, Set.of()));
        while (!todo.isEmpty()) {
            String next = todo.pop();
            if (seen.add(next)) {
                todo.addAll(graph.getOrDefault(next, Set.of()));
            }
        }
        return seen;
    }

    /** The strongly connected components with more than one file (Tarjan), each a set of files. */
    static List<Set<String>> cycles(Map<String, Set<String>> graph) {
        Map<String, Integer> index = new HashMap<>();
        Map<String, Integer> low = new HashMap<>();
        Deque<String> stack = new ArrayDeque<>();
        Set<String> onStack = new HashSet<>();
        List<Set<String>> result = new ArrayList<>();
        int[] counter = {0};
        for (String node : new TreeSet<>(graph.keySet())) {
            if (!index.containsKey(node)) {
                strongConnect(node, graph, index, low, stack, onStack, result, counter);
            }
        }
        return result;
    }

    private static void strongConnect(String v, Map<String, Set<String>> graph, Map<String, Integer> index,
                                      Map<String, Integer> low, Deque<String> stack, Set<String> onStack,
                                      List<Set<String>> result, int[] counter) {
        index.put(v, counter[0]);
        low.put(v, counter[0]);
        counter[0]++;
        stack.push(v);
        onStack.add(v);
        for (String w : graph.getOrDefault(v, Set.of())) {
            if (!index.containsKey(w)) {
                strongConnect(w, graph, index, low, stack, onStack, result, counter);
                low.put(v, Math.min(low.get(v), low.get(w)));
            } else if (onStack.contains(w)) {
                low.put(v, Math.min(low.get(v), index.get(w)));
            }
        }
        if (low.get(v).equals(index.get(v))) {
            Set<String> component = new TreeSet<>();
            String w;
            do {
                w = stack.pop();
                onStack.remove(w);
                component.add(w);
            } while (!w.equals(v));
            if (component.size() > 1) {
                result.add(component);
            }
        }
    }
}
