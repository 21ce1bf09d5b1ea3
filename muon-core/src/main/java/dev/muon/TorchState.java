package dev.muon;

import org.bytedeco.pytorch.Tensor;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a PyTorch-compatible state file holds, as a value ({@link TorchStateDict} writes and reads it): the
 * trained parameters by index (their names and handles, in {@code named_parameters()} order), the Muon groups
 * (each group's config and parameter indices) with their momentum buffers, and the AdamW groups (one config; one
 * group, or two when the second is the undecayed group of {@code noWeightDecayBelow2D}) with their moments.
 *
 * <p>The tensors are handles, not copies: a state is used at once, inside the caller's {@code PointerScope}.
 *
 * @param step          the optimizer's step count
 * @param names         every trained parameter's name; the index in this list is the parameter's index in the file
 * @param params        their handles, same order (shapes and dtypes are checked against them on a read)
 * @param muonConfigs   each Muon group's config
 * @param muonGroups    each Muon group's parameter indices
 * @param momentum      Muon momentum buffers by parameter index (absent: no buffer yet)
 * @param adamWConfig   the AdamW config, null when there is no AdamW part (a {@link Muon} alone)
 * @param adamWGroups   each AdamW group's parameter indices; a second group has weight decay 0
 * @param adamW         AdamW moments by parameter index (absent: no update yet)
 */
record TorchState(long step, List<String> names, List<Tensor> params, List<MuonConfig> muonConfigs,
                  List<List<Integer>> muonGroups, Map<Integer, Tensor> momentum, AdamWConfig adamWConfig,
                  List<List<Integer>> adamWGroups, Map<Integer, AdamWMoments> adamW) {

    /**
     * Checks that the lists line up.
     *
     * @throws IllegalArgumentException if names and handles, or Muon configs and groups, differ in length
     */
    TorchState {
        if (names.size() != params.size()) {
            throw new IllegalArgumentException("names and params must line up, got " + names.size() + " and "
                    + params.size());
        }
        if (muonConfigs.size() != muonGroups.size()) {
            throw new IllegalArgumentException("muonConfigs and muonGroups must line up, got " + muonConfigs.size()
                    + " and " + muonGroups.size());
        }
        Objects.requireNonNull(adamWGroups, "adamWGroups");
        names = List.copyOf(names);
        params = List.copyOf(params);
        muonConfigs = List.copyOf(muonConfigs);
        muonGroups = copyGroups(muonGroups);
        adamWGroups = copyGroups(adamWGroups);
        momentum = Collections.unmodifiableMap(new HashMap<>(momentum));
        adamW = Collections.unmodifiableMap(new HashMap<>(adamW));
    }

    private static List<List<Integer>> copyGroups(List<List<Integer>> groups) {
        List<List<Integer>> copy = new ArrayList<>();
        groups.forEach(g -> copy.add(List.copyOf(g)));
        return List.copyOf(copy);
    }
}
