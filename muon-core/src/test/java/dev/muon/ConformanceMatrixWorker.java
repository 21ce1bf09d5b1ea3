package dev.muon;

import dev.muon.ConformanceCells.Place;
import dev.muon.distributed.DistributedGroup;
import dev.muon.golden.ConformanceMatrix;
import dev.muon.golden.ConformanceMatrix.Dtype;
import dev.muon.golden.ConformanceMatrix.Row;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * One rank of the conformance matrix at world size 2 ({@code dev.muon.distributed.ConformanceMatrixDistributedTest}):
 * every cell, sharded over the group, in this one process; each line of the report names the cell and says
 * {@code ok} or what is wrong.
 */
public final class ConformanceMatrixWorker {
    private ConformanceMatrixWorker() {
    }

    /** The report of a rank: {@code conformance-world<W>-rank<r>.txt}. */
    public static Path report(Path dir, int world, int rank) {
        return dir.resolve("conformance-world" + world + "-rank" + rank + ".txt");
    }

    /**
     * Runs every cell and writes this rank's report.
     *
     * @param group the group
     * @param dir   where the report and the state files go
     * @throws IOException if the report cannot be written
     */
    public static void run(DistributedGroup group, Path dir) throws IOException {
        List<String> report = new ArrayList<>();
        int cell = 0;
        for (Dtype dtype : Dtype.values()) {
            for (Row row : ConformanceMatrix.rows(dtype)) {
                for (Place place : Place.values()) {
                    Path state = Files.createDirectories(dir.resolve("state-rank" + group.rank() + "-" + cell++));
                    String wrong = ConformanceCells.run(row, dtype, place, state, group);
                    report.add(dtype + " " + place + " " + row + ": " + (wrong == null ? "ok" : wrong));
                }
            }
        }
        Files.write(report(dir, group.worldSize(), group.rank()), report);
    }

    /**
     * The cells a report must hold.
     *
     * @return their count
     */
    public static int cells() {
        int n = 0;
        for (Dtype dtype : Dtype.values()) {
            n += ConformanceMatrix.rows(dtype).size() * Place.values().length;
        }
        return n;
    }
}
