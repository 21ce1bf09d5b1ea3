/**
 * muon-djl's runnable example and benchmark, on DJL's own libtorch: {@link dev.muon.examples.djl.FashionMnistDjl}
 * (DJL's MNIST MLP on Fashion-MNIST, DJL's {@code Adam} against {@code MuonAdamW}, one line apart) and
 * {@link dev.muon.examples.djl.DjlStepBenchmark} (one optimizer step of a GPT-2-small-width block). A module of its
 * own, apart from the bytedeco examples, because DJL's libtorch and bytedeco's cannot share a JVM.
 */
package dev.muon.examples.djl;
