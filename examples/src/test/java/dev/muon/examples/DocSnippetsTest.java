package dev.muon.examples;

import dev.muon.MuonAdamW;
import dev.muon.OptimizerKind;
import dev.muon.distributed.GroupConfig;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DocSnippetsTest {
    private static final Path DOCS = Path.of("..", "docs");
    private static final Path SOURCES = Path.of("src");
    private static final Pattern BLOCK = Pattern.compile("```(java|diff)\\n(.*?)```", Pattern.DOTALL);

    /** The trimmed, non-blank lines of a text, joined by newlines: indentation differs between page and source. */
    private static String normalise(String text) {
        List<String> lines = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (!line.isBlank()) {
                lines.add(line.trim());
            }
        }
        return String.join("\n", lines);
    }

    private static String read(Path path) throws IOException {
        return Files.readString(path, StandardCharsets.UTF_8);
    }

    /**
     * muon-spark's snippets: compiled and run in that module (Spark is not on this one's class path), checked here as
     * text with the rest of distributed.md.
     */
    private static final Path SPARK_SNIPPETS = Path.of("..", "muon-spark", "src", "test", "java", "dev", "muon",
            "spark", "DocSnippetsSpark.java");

    /** Every DocSnippets*.java source but the tests: a feature may keep its snippets in a file of its own. */
    private static String readSnippets() throws IOException {
        StringBuilder all = new StringBuilder();
        all.append(read(SPARK_SNIPPETS)).append('\n');
        try (java.util.stream.Stream<Path> files = Files.list(SOURCES.resolve("test/java/dev/muon/examples"))) {
            for (Path p : files.filter(f -> f.getFileName().toString().matches("DocSnippets\\w*(?<!Test)\\.java"))
                    .sorted().toList()) {
                all.append(read(p)).append('\n');
            }
        }
        return all.toString();
    }

    @ParameterizedTest
    @ValueSource(strings = {"getting-started.md", "hyperparameters.md", "api.md", "checkpoints.md", "distributed.md",
            "../README.md"})
    void everyCodeBlock_isCompiledSource(String page) throws IOException {
        String snippets = normalise(readSnippets());
        String example = normalise(read(SOURCES.resolve("main/java/dev/muon/examples/FashionMnist.java")));
        Matcher m = BLOCK.matcher(read(DOCS.resolve(page)));
        int blocks = 0;
        while (m.find()) {
            blocks++;
            if (m.group(1).equals("java")) {
                String block = normalise(m.group(2));
                if (block.startsWith("package ")) {
                    // A whole source file: release-check's MinimalProjectIT compiles and runs it as printed.
                    assertTrue(page.equals("getting-started.md"), page + ": a whole java file here is not compiled"
                            + " by any test; only getting-started.md's Main.java is (MinimalProjectIT)");
                } else if (block.lines().allMatch(l -> l.startsWith("import "))) {
                    // The imports a page's fragments need: each is one that DocSnippets*.java, which compiles them,
                    // has.
                    for (String line : block.split("\n")) {
                        assertTrue(snippets.lines().anyMatch(line::equals), page + ": " + line
                                + " is not an import of DocSnippets*.java, where the fragments compile");
                    }
                } else {
                    assertTrue(snippets.contains(block), page + ": this java block is not in DocSnippets*.java:\n"
                            + block);
                }
            } else {
                // A diff shows FashionMnist's two training methods: every line, less its +/-, is in the source.
                for (String line : m.group(2).split("\n")) {
                    String code = line.isEmpty() ? "" : line.substring(1).trim();
                    assertTrue(code.isEmpty() || example.contains(code),
                            page + ": this diff line is not in FashionMnist.java: " + code);
                }
            }
        }
        assertTrue(blocks > 0, page + " has no code block to check");
    }

    @Test
    void snippets_buildAndTrain() {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(1);
            FashionMlp model = new FashionMlp();
            MuonAdamW swapped = DocSnippets.readmeQuickStart(new QuickStart.Mlp(), torch.randn(16, 32),
                    torch.randint(10, new long[] {16}), 10);
            assertEquals(10, swapped.stepCount());
            assertEquals(List.of("fc1.weight", "fc2.weight"), swapped.assignment().names(OptimizerKind.MUON));
            List<Tensor> params = List.of(torch.randn(8, 4), torch.randn(4, 8));
            assertEquals(2, DocSnippets.apiMuonGroups(params, List.of(torch.randn(6, 6)), List.of(torch.randn(5, 7)))
                    .get(1).groupCount());
            assertEquals(2, DocSnippets.apiMuonAdamW(model).size());
            assertTrue(DocSnippets.readAssignment(swapped) > 0);
            assertFalse(DocSnippets.overrideAssignment(model).assignment().names(OptimizerKind.MUON)
                    .contains("fc1.weight"));
            for (Function<FashionMlp, MuonAdamW> build : List.<Function<FashionMlp, MuonAdamW>>of(
                    DocSnippets::pytorchDefaults, DocSnippets::kellerJordan, DocSnippets::moonlight,
                    DocSnippets::tunedAdamW)) {
                assertEquals(List.of("fc1.weight", "fc2.weight"), build.apply(model).assignment()
                        .names(OptimizerKind.MUON));
            }
        }
    }

    @Test
    void noDecaySnippet_marksTheBiasesAndTrains() {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(4);
            FashionMlp model = new FashionMlp();
            MuonAdamW opt = DocSnippets.apiNoDecayBelow2D(model);
            assertTrue(opt.assignment().rows().stream().filter(r -> r.name().endsWith(".bias"))
                    .allMatch(r -> r.reason().endsWith("; no weight decay")), opt.assignment().toString());
            assertTrue(opt.assignment().rows().stream().filter(r -> r.name().equals("head.weight"))
                    .noneMatch(r -> r.reason().contains("no weight decay")), opt.assignment().toString());
            model.forward(torch.randn(8, 1, 28, 28)).sum().backward();
            opt.step();
            assertEquals(1, opt.stepCount());
        }
    }

    /** The row-split snippet: the fused QKV in three blocks, W_q per head, the table says so, and it steps. */
    @Test
    void rowSplitSnippet_splitsQkvAndHeads_andTrains() {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(5);
            java.util.Map<String, Tensor> named = new java.util.LinkedHashMap<>();
            named.put("attn.qkv.weight", torch.randn(24, 8).requires_grad_(true));
            named.put("attn.q_proj.weight", torch.randn(8, 8).requires_grad_(true));
            named.put("mlp.weight", torch.randn(8, 8).requires_grad_(true));
            named.put("lm_head.weight", torch.randn(10, 8).requires_grad_(true));
            MuonAdamW opt = DocSnippets.apiRowSplit(named, 8, 4);
            List<String> reasons = new ArrayList<>();
            opt.assignment().rows().forEach(r -> reasons.add(r.name() + ": " + r.reason()));
            assertEquals(List.of("attn.qkv.weight: hidden matrix; NS per row block splitRows(8, 8, 8)",
                    "attn.q_proj.weight: hidden matrix; NS per row block perHead(4)", "mlp.weight: hidden matrix",
                    "lm_head.weight: embedding or head ('lm_head')"), reasons);
            Tensor before = named.get("attn.qkv.weight").clone();
            named.values().forEach(t -> t.mutable_grad().put(torch.randn(t.shape())));
            opt.step();
            assertEquals(1, opt.stepCount());
            assertFalse(before.equal(named.get("attn.qkv.weight")));
        }
    }

    @Test
    void checkpointSnippet_resumesFromTheSavedStep(@TempDir Path dir) {
        try (PointerScope scope = new PointerScope()) {
            SeededBatch run = SeededBatch.of(2);
            Path ckpt = dir.resolve("run.ckpt");
            DocSnippets.resumableRun(run.model(), run.images(), run.labels(), ckpt, 2).save(ckpt);
            assertEquals(4, DocSnippets.resumableRun(run.model(), run.images(), run.labels(), ckpt, 4).stepCount());
        }
    }

    /**
     * What the checkpoint snippets train on: an MLP and one batch of 16 random images with their labels, drawn in
     * that order after the seed, so that the seed alone decides them.
     */
    private record SeededBatch(FashionMlp model, Tensor images, Tensor labels) {
        static SeededBatch of(long seed) {
            torch.manual_seed(seed);
            FashionMlp model = new FashionMlp();
            Tensor images = torch.randn(16, 1, 28, 28);
            Tensor labels = torch.randint(10, new long[] {16});
            return new SeededBatch(model, images, labels);
        }
    }

    /** The getting-started fix names a resource that exists: a wrong path would make JavaCPP throw. */
    @Test
    void libtorchNativesSnippet_putsLibtorchCpuIntoTheCache() throws IOException {
        DocSnippets.readyLibtorchNatives();
        Path cached = Loader.getCacheDir().toPath();
        try (java.util.stream.Stream<Path> files = Files.walk(cached)) {
            assertTrue(files.anyMatch(p -> p.endsWith(Path.of("org", "bytedeco", "pytorch", Loader.getPlatform(),
                    System.mapLibraryName("torch_cpu")))), "libtorch_cpu in " + cached);
        }
    }

    /** The distributed snippet with a group of one: it trains, saves, and the file loads into a plain optimizer. */
    @Test
    void distributedSnippet_trainsAndSaves(@TempDir Path dir) throws Exception {
        try (PointerScope scope = new PointerScope()) {
            SeededBatch run = SeededBatch.of(3);
            Path ckpt = dir.resolve("dist.ckpt");
            int port;
            try (java.net.ServerSocket socket = new java.net.ServerSocket(0)) {
                port = socket.getLocalPort();
            }
            MuonAdamW trained = DocSnippets.distributedRun(GroupConfig.of("127.0.0.1", port, 0, 1), run.model(),
                    run.images(), run.labels(), ckpt, 3);
            assertEquals(3, trained.stepCount());
            MuonAdamW plain = MuonAdamW.builder(run.model().named_parameters()).build();
            plain.load(ckpt);
            assertEquals(3, plain.stepCount());
        }
    }

    /** The logging snippet: the library's INFO records (the assignment table) go, its warnings stay. */
    @Test
    void quietMuon_silencesInfo_keepsWarnings() {
        java.util.logging.Logger parent = java.util.logging.Logger.getLogger("dev.muon");
        java.util.logging.Level before = parent.getLevel();
        System.Logger assignmentLog = System.getLogger(MuonAdamW.class.getName());
        try {
            assertTrue(assignmentLog.isLoggable(System.Logger.Level.INFO), "INFO must be on before the snippet");
            DocSnippets.quietMuon();
            assertFalse(assignmentLog.isLoggable(System.Logger.Level.INFO));
            assertTrue(assignmentLog.isLoggable(System.Logger.Level.WARNING));
        } finally {
            parent.setLevel(before);
        }
    }

    /** The torch-state snippet: the exported file imports into a fresh optimizer with the same state. */
    @Test
    void torchStateSnippet_exportsAndImports(@TempDir Path dir) {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(5);
            FashionMlp model = new FashionMlp();
            MuonAdamW resumed = DocSnippets.torchStateExchange(model, torch.randn(8, 1, 28, 28),
                    torch.randint(10, new long[] {8}), dir);
            assertEquals(1, resumed.stepCount());
            assertTrue(resumed.muonState("fc1.weight").isPresent());
            assertTrue(Files.exists(dir.resolve("optimizer.pt")));
        }
    }
}
