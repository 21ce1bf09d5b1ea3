package dev.muon.djl;

import ai.djl.ndarray.types.DataType;
import dev.muon.orthogonalize.NsPrecision;

/**
 * One precision of a golden replay: the parameters' dtype, the Newton–Schulz precision and the tolerances of
 * muon-core's golden README (float64: 1e-12 on everything; float32: 1e-5 absolute on parameters, 1e-4 relative
 * on displacements, 1e-5 relative on updates and state).
 *
 * @param dtype           the parameters' dtype
 * @param ns              the Newton–Schulz precision
 * @param paramAbs        the absolute tolerance on parameters
 * @param displacementRel the relative tolerance on {@code p_last − p_0}
 * @param updateRel       the relative tolerance on the orthogonalized update
 * @param stateRel        the relative tolerance on momentum buffers and AdamW moments
 */
record GoldenPrecision(DataType dtype, NsPrecision ns, double paramAbs, double displacementRel, double updateRel,
                       double stateRel) {
    static final GoldenPrecision FLOAT64 = new GoldenPrecision(DataType.FLOAT64, NsPrecision.FLOAT64,
            1e-12, 1e-12, 1e-12, 1e-12);
    static final GoldenPrecision FLOAT32 = new GoldenPrecision(DataType.FLOAT32, NsPrecision.FLOAT32,
            1e-5, 1e-4, 1e-5, 1e-5);

    @Override
    public String toString() {
        return dtype.toString();
    }
}
