package dev.muon.spark;

import org.apache.spark.SparkConf;

import java.util.Optional;

/**
 * What barrier mode cannot run, checked on the driver before the stage is submitted: each refusal names the setting
 * that causes it. Spark finds some of these itself, but later (the slot check retries for minutes) or in words
 * that do not name the fix.
 */
final class BarrierPreflight {
    private BarrierPreflight() {
    }

    /**
     * The first reason this application cannot run a barrier stage of {@code worldSize} tasks, if any.
     *
     * @param conf             the application's settings
     * @param master           the master URL, for the message
     * @param worldSize        the number of barrier tasks
     * @param slots            how many tasks the cluster runs at once with the default resource profile
     * @param allowUnencrypted whether unencrypted c10d traffic is allowed under {@code spark.ssl.enabled}
     * @return the refusal, naming the setting
     */
    static Optional<String> refusal(SparkConf conf, String master, int worldSize, int slots,
                                    boolean allowUnencrypted) {
        if (conf.getBoolean("spark.dynamicAllocation.enabled", false)) {
            return Optional.of("spark.dynamicAllocation.enabled is true: a barrier stage needs all its " + worldSize
                    + " tasks running at once, which Spark cannot promise while it adds and removes executors "
                    + "(SPARK-24942). Set spark.dynamicAllocation.enabled=false for this application.");
        }
        if (conf.getBoolean("spark.ssl.enabled", false) && !allowUnencrypted) {
            return Optional.of("spark.ssl.enabled is true, but the ranks' c10d traffic (the rendezvous store and "
                    + "Gloo's collectives, plain TCP) cannot be encrypted. On a network you trust, allow it with "
                    + "SparkTrainingConfig.withUnencryptedTraffic(true); otherwise set spark.ssl.enabled=false.");
        }
        if (slots < worldSize) {
            return Optional.of("worldSize " + worldSize + " needs " + worldSize + " task slots at once for its "
                    + "barrier stage, but the cluster (" + master + ", spark.task.cpus="
                    + conf.get("spark.task.cpus", "1") + ") has " + slots + ". Lower worldSize, lower "
                    + "spark.task.cpus, or give the application more executor cores.");
        }
        return Optional.empty();
    }
}
