package dev.muon.examples.djl;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Block;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.optimizer.Optimizer;
import dev.muon.OptimizerKind;
import dev.muon.djl.Muon;
import dev.muon.djl.MuonAdamW;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every code block of {@code docs/djl.md} is compiled source: a {@code java} block is a piece of
 * {@link DocSnippetsDjl}, a {@code diff} block shows lines of {@link FashionMnistDjl}; and the snippets run.
 */
class DocSnippetsDjlTest {
    private static final Path PAGE = Path.of("..", "docs", "djl.md");
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

    @Test
    void everyCodeBlock_isCompiledSource() throws IOException {
        String snippets = normalise(read(Path.of("src/test/java/dev/muon/examples/djl/DocSnippetsDjl.java")));
        String example = normalise(read(Path.of("src/main/java/dev/muon/examples/djl/FashionMnistDjl.java")));
        Matcher m = BLOCK.matcher(read(PAGE));
        int java = 0;
        int diff = 0;
        while (m.find()) {
            if (m.group(1).equals("java")) {
                java++;
                String block = normalise(m.group(2));
                assertTrue(snippets.contains(block), "djl.md: this java block is not in DocSnippetsDjl.java:\n" + block);
            } else {
                diff++;
                for (String line : m.group(2).split("\n")) {
                    String code = line.isEmpty() ? "" : line.substring(1).trim();
                    assertTrue(code.isEmpty() || example.contains(code),
                            "djl.md: this diff line is not in FashionMnistDjl.java: " + code);
                }
            }
        }
        assertTrue(java >= 4 && diff == 1, "djl.md has " + java + " java and " + diff + " diff blocks");
    }

    private static SequentialBlock mlp(boolean bias) {
        return new SequentialBlock().add(Linear.builder().setUnits(16).optBias(bias).build())
                .add(Activation.reluBlock()).add(Linear.builder().setUnits(16).optBias(bias).build())
                .add(Activation.reluBlock()).add(Linear.builder().setUnits(3).optBias(bias).build());
    }

    /** Trains {@code steps} steps of a block on one fixed batch; returns the first and last loss. */
    private static float[] train(Trainer trainer, int steps) {
        Engine.getInstance().setRandomSeed(3);
        trainer.initialize(new Shape(8, 6));
        NDArray x = trainer.getManager().randomNormal(new Shape(8, 6));
        NDArray y = trainer.getManager().create(new float[] {0, 1, 2, 0, 1, 2, 0, 1});
        float[] losses = new float[2];
        for (int step = 0; step < steps; step++) {
            try (GradientCollector collector = trainer.newGradientCollector()) {
                NDArray loss = trainer.getLoss().evaluate(new NDList(y), trainer.forward(new NDList(x)));
                collector.backward(loss);
                losses[step == 0 ? 0 : 1] = loss.getFloat();
            }
            trainer.step();
        }
        return losses;
    }

    @Test
    void theSwap_trains() {
        try (Model model = Model.newInstance("swap")) {
            Block block = mlp(true);
            model.setBlock(block);
            MuonAdamW opt = (MuonAdamW) DocSnippetsDjl.oneLineSwap(block);
            try (Trainer trainer = DocSnippetsDjl.trainer(model, opt)) {
                float[] losses = train(trainer, 20);
                assertTrue(losses[1] < losses[0], "loss " + losses[0] + " -> " + losses[1]);
                assertEquals(20, opt.stepCount());
                DocSnippetsDjl.printAssignment(opt);
                assertEquals(List.of("01Linear_weight", "03Linear_weight"), opt.assignment().names(OptimizerKind.MUON));
            }
        }
    }

    @Test
    void tunedAndScheduledAndPlain_build_andTrain() {
        for (int variant = 0; variant < 3; variant++) {
            try (Model model = Model.newInstance("variant")) {
                Block block = mlp(variant != 2);
                model.setBlock(block);
                Optimizer optimizer = switch (variant) {
                    case 0 -> DocSnippetsDjl.tuned(block);
                    case 1 -> DocSnippetsDjl.scheduled(block, 10);
                    default -> DocSnippetsDjl.plainMuon(block);
                };
                try (Trainer trainer = DocSnippetsDjl.trainer(model, optimizer)) {
                    float[] losses = train(trainer, 10);
                    assertTrue(losses[1] < losses[0], "variant " + variant + ": " + losses[0] + " -> " + losses[1]);
                }
                if (optimizer instanceof MuonAdamW hybrid && variant == 0) {
                    assertEquals(0.02, hybrid.muonConfig().lr());
                    assertEquals(0.95, hybrid.adamWConfig().beta2());
                } else if (optimizer instanceof Muon muon) {
                    assertEquals(10, muon.stepCount());
                }
            }
        }
    }
}
