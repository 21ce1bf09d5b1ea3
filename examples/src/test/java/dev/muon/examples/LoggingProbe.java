package dev.muon.examples;

import dev.muon.MuonAdamW;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * A fresh JVM that builds one {@code MuonAdamW} on the CPU, which logs the assignment table (INFO) and, when
 * {@code OMP_WAIT_POLICY} is not set, the thread-pool warning (WARNING): {@link LoggingConfigTest} starts it with a
 * logging configuration and reads what reached the console.
 */
final class LoggingProbe {
    private LoggingProbe() {
    }

    public static void main(String[] args) {
        torch.manual_seed(1);
        MuonAdamW optimizer = MuonAdamW.dropIn(new FashionMlp().named_parameters(), new AdamWOptions(1e-3));
        System.out.println("built, " + optimizer.assignment().rows().size() + " parameters");
    }
}
