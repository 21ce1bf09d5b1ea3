package dev.muon;

import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.OutputArchive;
import org.bytedeco.pytorch.Tensor;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * NorMuon's entries of the checkpoint format ({@link Checkpoint}): one optional {@code muon_normuon_v_i} per Muon
 * parameter, its per-row second moment. Absent means NorMuon off, or a parameter not updated yet; older files
 * have none and read as NorMuon off.
 */
final class NorMuonEntries {
    /** NorMuon's per-row second moment of Muon parameter i. */
    static final String KEY = "muon_normuon_v_";

    private NorMuonEntries() {
    }

    /** Writes parameter i's second moment, if it has one. */
    static void write(OutputArchive out, int i, Tensor secondMoment) {
        if (secondMoment != null) {
            out.write(KEY + i, secondMoment);
        }
    }

    /**
     * Refuses a checkpoint whose groups have NorMuon on where the reader's have it off, or the reverse: the
     * second moments would be lost, or missing.
     *
     * @throws IllegalStateException naming the group, both settings and how to build a reader for the file
     */
    static void requireSameSwitch(List<MuonConfig> saved, List<MuonConfig> expected, Path path) {
        for (int g = 0; g < saved.size(); g++) {
            NorMuonConfig s = saved.get(g).norMuon();
            NorMuonConfig e = expected.get(g).norMuon();
            if ((s == null) != (e == null)) {
                throw new IllegalStateException("checkpoint " + path + ": Muon group " + g + " was saved with "
                        + "NorMuon " + (s == null ? "off" : "on (" + s + ")") + " but this optimizer has it "
                        + (e == null ? "off" : "on (" + e + ")") + "; build the optimizer "
                        + (s == null ? "without withNorMuon(...)" : "with withNorMuon(" + s.beta2() + ", " + s.eps()
                        + ")") + " to load it; nothing was changed");
            }
        }
    }

    /**
     * Muon parameter i's second moment, checked against the shape and dtype the parameter's would have; null when
     * the file holds none. A second moment without NorMuon or without the momentum made with it, or, where every
     * group has NorMuon, a momentum buffer without its second moment, is a damaged file. (With NorMuon in some
     * groups only, {@code Muon.load}, which knows the groups, checks the last case.)
     *
     * @throws IllegalStateException for a damaged file or a tensor of the wrong shape or dtype
     */
    static Tensor read(InputArchive in, int i, Tensor param, String name, List<MuonConfig> saved,
                       boolean hasMomentum, Path path) {
        String what = name + " (NorMuon second moment)";
        Tensor v = new Tensor();
        if (!in.try_read(KEY + i, v)) {
            if (hasMomentum && saved.stream().allMatch(c -> c.norMuon() != null)) {
                throw new IllegalStateException("checkpoint " + path + ": '" + name + "' has a momentum buffer but "
                        + "no NorMuon second moment, though NorMuon is on; the file is damaged");
            }
            return null;
        }
        if (!hasMomentum || saved.stream().allMatch(c -> c.norMuon() == null)) {
            throw new IllegalStateException("checkpoint " + path + " holds '" + what + "' but no NorMuon group or no "
                    + "momentum buffer for it; the file is damaged");
        }
        long[] shape = NeuronNormalization.stateShape(param.shape());
        if (!Arrays.equals(v.shape(), shape) || v.scalar_type().value
                != NeuronNormalization.stateDtype(param.scalar_type()).value) {
            throw new IllegalStateException("checkpoint " + path + ": '" + what + "' has shape "
                    + Arrays.toString(v.shape()) + " and dtype " + v.scalar_type() + " but the parameter's has shape "
                    + Arrays.toString(shape) + " and dtype " + NeuronNormalization.stateDtype(param.scalar_type()));
        }
        return v;
    }
}
