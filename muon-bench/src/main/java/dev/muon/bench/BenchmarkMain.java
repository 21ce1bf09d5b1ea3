package dev.muon.bench;

import dev.muon.internal.TorchNatives;

/**
 * The entry point of {@code benchmarks.jar}: JMH's own {@code Main}, after libtorch's native files have been put
 * into the JavaCPP cache. The forked benchmark JVMs share that cache, so none of them can load a system-wide
 * libtorch beside ours on a fresh machine ({@link TorchNatives} says why that crashes).
 *
 * <p>How to run: {@code java -jar muon-bench/target/benchmarks.jar NewtonSchulzBenchmark ...}, exactly as with
 * JMH's {@code Main}; every argument is JMH's.
 */
public final class BenchmarkMain {
    private BenchmarkMain() {
    }

    /**
     * Readies the natives, then runs JMH with {@code args}.
     *
     * @param args JMH's command line
     * @throws Exception whatever JMH throws
     */
    public static void main(String[] args) throws Exception {
        TorchNatives.extract();
        org.openjdk.jmh.Main.main(args);
    }
}
