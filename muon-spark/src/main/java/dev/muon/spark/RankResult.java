package dev.muon.spark;

import java.io.Serializable;

/**
 * What a barrier task hands to the driver: rank 0's return value, tagged with its rank and stage attempt.
 *
 * @param rank    the rank that returned it
 * @param attempt the barrier stage's attempt number
 * @param value   the function's return value, null allowed
 * @param <R>     the value's type
 */
record RankResult<R extends Serializable>(int rank, int attempt, R value) implements Serializable {
}
