package dev.muon;

import dev.muon.internal.TorchNatives;

/**
 * The settings of NorMuon's neuron-wise normalization (Li et al., "NorMuon: Making Muon more efficient and
 * scalable", arXiv 2510.05491, Algorithm 1): an immutable value, validated at construction. Turned on for a Muon
 * group by {@link MuonConfig#withNorMuon(NorMuonConfig)}; off by default.
 *
 * <p>After Newton–Schulz, each output row (neuron) {@code i} of the update {@code O} keeps a second moment
 * <pre>
 *   v[i] = beta2·v[i] + (1 − beta2)·mean_j(O[i,j]²)      (v starts at zero; no bias correction)
 *   Ô[i,j] = O[i,j] / (sqrt(v[i]) + eps)
 *   p = p − lr·extraScale · 0.2·sqrt(rows·cols) · Ô / ‖Ô‖_F
 * </pre>
 * The last line is the paper's lr rescaling; it takes the place of {@link MuonConfig#adjustLr()}'s ratio. See
 * {@code docs/algorithm.md}.
 *
 * <table>
 *   <caption>Fields</caption>
 *   <tr><th>field</th><th>default</th><th>rule</th></tr>
 *   <tr><td>beta2</td><td>0.95</td><td>in [0, 1)</td></tr>
 *   <tr><td>eps</td><td>1e-10</td><td>finite, &gt; 0</td></tr>
 * </table>
 *
 * <pre>{@code
 * MuonConfig config = MuonConfig.defaults().withLr(0.02).withNorMuon(NorMuonConfig.defaults());
 * }</pre>
 *
 * @param beta2 the decay of the per-row second moment
 * @param eps   added to {@code sqrt(v)} before the division
 */
public record NorMuonConfig(double beta2, double eps) {
    /**
     * The RMS that the paper's lr rescaling gives the update: {@code η̂ = 0.2·η·sqrt(m·n)/‖Ô‖_F} (Algorithm 1),
     * chosen there to match AdamW's typical update RMS, as Moonlight's {@code 0.2·sqrt(max(m, n))} does for Muon.
     * It takes the place of {@link MuonConfig#adjustLr()}'s ratio ({@link MuonConfig#scaledLr}).
     */
    public static final double UPDATE_RMS = 0.2;

    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Validates both fields.
     *
     * @throws IllegalArgumentException naming the field, the rule and the value
     */
    public NorMuonConfig {
        if (!(beta2 >= 0 && beta2 < 1)) {
            throw new IllegalArgumentException("norMuon beta2 must be in [0, 1), got " + beta2);
        }
        if (!Double.isFinite(eps) || !(eps > 0)) {
            throw new IllegalArgumentException("norMuon eps must be a finite number > 0, got " + eps);
        }
    }

    /**
     * The defaults: {@code beta2 = 0.95} and {@code eps = 1e-10}, those of the authors' released code
     * ({@code normuon.py} of github.com/zichongli5/NorMuon).
     *
     * @return the default settings
     */
    public static NorMuonConfig defaults() {
        return new NorMuonConfig(0.95, 1e-10);
    }
}
