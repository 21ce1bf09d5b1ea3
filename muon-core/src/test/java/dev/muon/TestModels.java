package dev.muon;

import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.pytorch.BatchNorm2dImpl;
import org.bytedeco.pytorch.BatchNormOptions;
import org.bytedeco.pytorch.Conv2dImpl;
import org.bytedeco.pytorch.EmbeddingImpl;
import org.bytedeco.pytorch.LayerNormImpl;
import org.bytedeco.pytorch.LayerNormOptions;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.LinearOptions;
import org.bytedeco.pytorch.LongVector;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;

/** Small real libtorch models with the usual parameter names, and deterministic gradients for them. */
final class TestModels {
    private TestModels() {
    }

    /** A GPT-2-like model: {@code wte}, {@code wpe}, {@code layers} blocks, {@code ln_f}, {@code lm_head}. */
    static Module gptLike(int vocab, int d, int layers) {
        Module gpt = new Module("gpt");
        gpt.register_module("wte", new EmbeddingImpl(vocab, d));
        gpt.register_module("wpe", new EmbeddingImpl(16, d));
        Module h = new Module("h");
        for (int i = 0; i < layers; i++) {
            Module block = new Module("block");
            block.register_module("ln_1", layerNorm(d));
            Module attn = new Module("attn");
            attn.register_module("c_attn", new LinearImpl(d, 3 * d));
            attn.register_module("c_proj", new LinearImpl(d, d));
            block.register_module("attn", attn);
            block.register_module("ln_2", layerNorm(d));
            Module mlp = new Module("mlp");
            mlp.register_module("c_fc", new LinearImpl(d, 4 * d));
            mlp.register_module("c_proj", new LinearImpl(4 * d, d));
            block.register_module("mlp", mlp);
            h.register_module(String.valueOf(i), block);
        }
        gpt.register_module("h", h);
        gpt.register_module("ln_f", layerNorm(d));
        LinearOptions head = new LinearOptions(d, vocab);
        head.bias().put(false);
        gpt.register_module("lm_head", new LinearImpl(head));
        return gpt;
    }

    /** A small CNN: two conv layers with batch norm, then a top-level {@code fc} classifier. */
    static Module cnnLike() {
        Module cnn = new Module("cnn");
        cnn.register_module("conv1", new Conv2dImpl(3, 8, new LongPointer(3L, 3L)));
        cnn.register_module("bn1", new BatchNorm2dImpl(new BatchNormOptions(8)));
        cnn.register_module("conv2", new Conv2dImpl(8, 16, new LongPointer(3L, 3L)));
        cnn.register_module("bn2", new BatchNorm2dImpl(new BatchNormOptions(16)));
        cnn.register_module("fc", new LinearImpl(16, 10));
        return cnn;
    }

    static LayerNormImpl layerNorm(int d) {
        return new LayerNormImpl(new LayerNormOptions(new LongVector(new long[]{d})));
    }

    /** The module's named parameters as an ordered map. */
    static Map<String, Tensor> named(Module m) {
        Map<String, Tensor> map = new LinkedHashMap<>();
        var dict = m.named_parameters();
        for (long i = 0; i < dict.size(); i++) {
            map.put(dict.get(i).key().getString(), dict.get(i).value());
        }
        return map;
    }

    /**
     * Runs {@code steps} steps from the optimizer's step count: zeroes the gradients, sets them from seed
     * {@code firstSeed} plus the step count (so that they depend on the step only, as a fixed data order would make
     * them), steps.
     */
    static void train(MuonAdamW opt, Map<String, Tensor> named, long firstSeed, int steps) {
        for (int i = 0; i < steps; i++) {
            opt.zeroGrad();
            setGradients(named, firstSeed + opt.stepCount());
            opt.step();
        }
    }

    /** Sets every parameter's gradient to values drawn from {@code seed}: the same seed gives the same bits. */
    static void setGradients(Map<String, Tensor> named, long seed) {
        setGradients(named.values(), seed);
    }

    /** The same for parameters without names, in their order. */
    static void setGradients(Iterable<Tensor> params, long seed) {
        Random random = new Random(seed);
        for (Tensor p : params) {
            double[] values = new double[(int) p.numel()];
            for (int i = 0; i < values.length; i++) {
                values[i] = random.nextGaussian();
            }
            p.mutable_grad().put(Tensor.create(values, p.shape()).to(p.scalar_type()));
        }
    }
}
