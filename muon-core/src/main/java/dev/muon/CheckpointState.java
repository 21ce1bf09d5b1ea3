package dev.muon;

import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.OutputArchive;
import org.bytedeco.pytorch.Tensor;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * What a checkpoint of {@link MuonAdamW} or {@link Muon} holds, as a value: the step count, the configs (one per
 * Muon group, and AdamW's), the layout text (which parameter goes where, with shapes and dtypes), the named
 * parameters, Muon's momentum buffers, and libtorch AdamW's own archive. The optimizer hands one out to be written ({@link Checkpoint#write}) and takes
 * one back after a read ({@link Checkpoint#read}); the format never reaches into the optimizer.
 *
 * <p>The tensors are handles, not copies: a state is used at once, inside the caller's {@code PointerScope}.
 *
 * @param step          the optimizer's step count
 * @param muonConfigs   each Muon group's config (a {@link MuonAdamW} has one Muon group)
 * @param adamWConfig   the AdamW group's config, null for a {@link Muon} alone
 * @param layout        {@link Assignment#layoutText()}: compared field by field on load
 * @param muonNames     the Muon parameters' names, in table order
 * @param muonParams    their values
 * @param muonMomentum  their momentum buffers, null where a parameter has none yet
 * @param adamWNames    the AdamW parameters' names, in table order
 * @param adamWParams   their values
 * @param adamW         libtorch AdamW's archive, null when the AdamW group is empty
 * @param schedule      the optimizer's {@link ScheduleRecord}, null when it has none (or the file held none)
 * @param muonSecondMoments NorMuon's per-row second moments of the Muon parameters, null where a parameter has
 *                      none (NorMuon off, or not updated yet)
 */
record CheckpointState(long step, List<MuonConfig> muonConfigs, AdamWConfig adamWConfig, String layout,
                       List<String> muonNames, List<Tensor> muonParams, List<Tensor> muonMomentum,
                       List<String> adamWNames, List<Tensor> adamWParams, AdamWArchive adamW,
                       ScheduleRecord schedule, List<Tensor> muonSecondMoments) {

    /** A state without NorMuon second moments: the form of every optimizer state before NorMuon. */
    CheckpointState(long step, List<MuonConfig> muonConfigs, AdamWConfig adamWConfig, String layout,
                    List<String> muonNames, List<Tensor> muonParams, List<Tensor> muonMomentum,
                    List<String> adamWNames, List<Tensor> adamWParams, AdamWArchive adamW, ScheduleRecord schedule) {
        this(step, muonConfigs, adamWConfig, layout, muonNames, muonParams, muonMomentum, adamWNames, adamWParams,
                adamW, schedule, Collections.nCopies(muonParams.size(), null));
    }

    /**
     * Checks that the lists line up.
     *
     * @throws IllegalArgumentException if a group's lists differ in length
     */
    CheckpointState {
        muonConfigs = List.copyOf(muonConfigs);
        if (muonConfigs.isEmpty()) {
            throw new IllegalArgumentException("muonConfigs must hold at least one group's config");
        }
        Objects.requireNonNull(layout, "layout");
        if (muonNames.size() != muonParams.size() || muonParams.size() != muonMomentum.size()) {
            throw new IllegalArgumentException("Muon names, values and momentum must line up, got "
                    + muonNames.size() + ", " + muonParams.size() + " and " + muonMomentum.size());
        }
        if (adamWNames.size() != adamWParams.size()) {
            throw new IllegalArgumentException("AdamW names and values must line up, got " + adamWNames.size()
                    + " and " + adamWParams.size());
        }
        muonNames = List.copyOf(muonNames);
        muonParams = List.copyOf(muonParams);
        // Nulls allowed: a parameter that has not been updated has no buffer.
        muonMomentum = Collections.unmodifiableList(new ArrayList<>(muonMomentum));
        if (muonSecondMoments.size() != muonParams.size()) {
            throw new IllegalArgumentException("Muon values and NorMuon second moments must line up, got "
                    + muonParams.size() + " and " + muonSecondMoments.size());
        }
        muonSecondMoments = Collections.unmodifiableList(new ArrayList<>(muonSecondMoments));
        adamWNames = List.copyOf(adamWNames);
        adamWParams = List.copyOf(adamWParams);
    }

    /**
     * libtorch AdamW's own archive ({@code AdamW::save}), in the form each side needs: an optimizer saving hands
     * out an {@link OutputArchive} to be written into the checkpoint, a read hands back the {@link InputArchive}
     * that {@code AdamW::load} takes. The bindings expose AdamW's state through these archives only.
     */
    static final class AdamWArchive {
        private final OutputArchive written;
        private final InputArchive read;

        private AdamWArchive(OutputArchive written, InputArchive read) {
            this.written = written;
            this.read = read;
        }

        /** The archive of an optimizer's current state, for a save. */
        static AdamWArchive of(AdamW adamW) {
            OutputArchive archive = new OutputArchive();
            adamW.save(archive);
            return new AdamWArchive(archive, null);
        }

        /** An archive read from a checkpoint, for a load. */
        static AdamWArchive read(InputArchive archive) {
            return new AdamWArchive(null, archive);
        }

        OutputArchive forWriting() {
            if (written == null) {
                throw new IllegalStateException("this AdamW archive was read from a file and cannot be written");
            }
            return written;
        }

        InputArchive forLoading() {
            if (read == null) {
                throw new IllegalStateException("this AdamW archive was made for a save and cannot be loaded");
            }
            return read;
        }
    }
}
