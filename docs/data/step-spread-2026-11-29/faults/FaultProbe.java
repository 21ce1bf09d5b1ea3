import dev.muon.*;
import dev.muon.orthogonalize.*;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.*;
import org.bytedeco.pytorch.global.torch;
import java.nio.file.*;
import java.util.*;

public class FaultProbe {
    static long faults() throws Exception {
        String line = Files.readString(Path.of("/proc/self/stat"));
        String[] f = line.substring(line.lastIndexOf(')') + 1).trim().split("\\s+");
        return Long.parseLong(f[7]);
    }
    static Tensor parameter(long... shape) {
        Tensor p = torch.randn(shape).mul_(new Scalar(0.02)).requires_grad_(true);
        p.mutable_grad().put(torch.randn(shape).mul_(new Scalar(1e-3)));
        return p;
    }
    static void build(List<Tensor> hidden, List<Tensor> rest, Map<String, Tensor> named) {
        int W = 768;
        rest.add(put(named, "wte.weight", parameter(8192, W)));
        rest.add(put(named, "wpe.weight", parameter(1024, W)));
        for (int l = 0; l < 4; l++) {
            String b = "blocks." + l + ".";
            for (String p : new String[]{"q","k","v","o"}) {
                hidden.add(put(named, b + "attn." + p + ".weight", parameter(W, W)));
                rest.add(put(named, b + "attn." + p + ".bias", parameter(W)));
            }
            hidden.add(put(named, b + "mlp.fc.weight", parameter(4 * W, W)));
            rest.add(put(named, b + "mlp.fc.bias", parameter(4 * W)));
            hidden.add(put(named, b + "mlp.proj.weight", parameter(W, 4 * W)));
            rest.add(put(named, b + "mlp.proj.bias", parameter(W)));
            for (String n : new String[]{"ln1","ln2"}) {
                rest.add(put(named, b + n + ".weight", parameter(W)));
                rest.add(put(named, b + n + ".bias", parameter(W)));
            }
        }
    }
    static Tensor put(Map<String, Tensor> m, String k, Tensor t) { m.put(k, t); return t; }
    static void time(String name, Runnable r) throws Exception {
        for (int i = 0; i < 3; i++) r.run();
        StringBuilder sb = new StringBuilder(name + ":");
        for (int i = 0; i < 10; i++) {
            long f0 = faults(); long t0 = System.nanoTime();
            r.run();
            long t1 = System.nanoTime(); long f1 = faults();
            sb.append(String.format(" %d/%.0fms", f1 - f0, (t1 - t0) / 1e6));
        }
        System.out.println(sb);
    }
    public static void main(String[] a) throws Exception {
        String which = a[0];
        NsPrecision prec = a.length > 1 && a[1].equals("bf16") ? NsPrecision.BFLOAT16 : NsPrecision.FLOAT32;
        try (PointerScope s = new PointerScope()) {
            List<Tensor> hidden = new ArrayList<>(), rest = new ArrayList<>();
            Map<String, Tensor> named = new LinkedHashMap<>();
            torch.manual_seed(0);
            build(hidden, rest, named);
            MuonConfig config = MuonConfig.defaults().withLr(0.02).withNsPrecision(prec)
                    .withNsAlgorithm(NsAlgorithm.AUTO).withBatchSameShape(true);
            switch (which) {
                case "muonadamw" -> { MuonAdamW o = MuonAdamW.builder(named).muon(config).outputLayerOnAdamW(false).build(); time(which + " " + prec, o::step); }
                case "muon" -> { Muon o = Muon.builder().addGroup(hidden, config).build(); time(which + " " + prec, o::step); }
                case "ours-adamw" -> { MuonAdamW o = MuonAdamW.builder(named).muonWhen((n, t) -> false).allowEmptyMuon(true).build(); time(which, o::step); }
                case "adamw-all" -> { AdamW o = new AdamW(new TensorVector(named.values().toArray(new Tensor[0])), new AdamWOptions(1e-3)); time(which, o::step); }
                case "adamw" -> { AdamW o = new AdamW(new TensorVector(rest.toArray(new Tensor[0])), new AdamWOptions(1e-3)); time(which, o::step); }
            }
        }
    }
}
