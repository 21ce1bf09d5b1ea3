/**
 * Training on a Spark cluster: {@link dev.muon.spark.SparkTraining} runs a {@link dev.muon.spark.RankFunction} in
 * one barrier stage of {@code worldSize} tasks, each a rank of muon-core's distributed mode
 * ({@link dev.muon.distributed.DistributedGroup}), and returns rank 0's result to the driver. The optimizer is built
 * in the function exactly as on one machine, plus the group ({@link dev.muon.spark.RankContext#group()}). Spark's
 * Java API only; Spark itself is {@code provided}.
 */
package dev.muon.spark;
