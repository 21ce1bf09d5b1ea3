/** muon-spark's example: {@link dev.muon.examples.spark.FashionMnistSpark}. */
package dev.muon.examples.spark;
