package dev.muon.examples;

import org.apache.commons.csv.CSVFormat;
import org.apache.commons.csv.CSVRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class RunTablesTest {
    private static FashionMnist.Result run(String optimizer, double lr, long seed, double accuracy) {
        return new FashionMnist.Result("mlp", optimizer, lr, seed,
                List.of(new FashionMnist.EpochPoint(1, 2.5, accuracy, 0.4, 0.5)), List.of(1.0, 0.8), 1234);
    }

    @Test
    void summarise_groupsSeeds_withMeanAndSampleSd() {
        List<RunTables.Summary> s = RunTables.summarise(List.of(run("AdamW", 1e-3, 1, 0.80),
                run("AdamW", 1e-3, 2, 0.84), run("MuonAdamW", 3e-3, 1, 0.90)), 1e-3);
        assertEquals(2, s.size());
        assertEquals(2, s.get(0).seeds());
        assertEquals(0.82, s.get(0).accuracy(), 1e-12);
        assertEquals(Math.sqrt(0.0008), s.get(0).accuracySd(), 1e-12);
        assertEquals(3.0, s.get(1).lrMultiplier(), 1e-12);
        assertEquals(0, s.get(1).accuracySd(), "one seed has no spread");
        assertEquals("3x", RunTables.multiple(s.get(1).lrMultiplier()));
    }

    @Test
    void epochsCsv_readsBack(@TempDir Path dir) throws Exception {
        Path csv = dir.resolve("epochs.csv");
        RunTables.writeEpochs(csv, List.of(run("Muon,AdamW \"quoted\"", 1e-3, 7, 0.875)));
        try (Reader in = Files.newBufferedReader(csv)) {
            List<CSVRecord> rows = CSVFormat.DEFAULT.builder().setHeader().setSkipHeaderRecord(true).get()
                    .parse(in).getRecords();
            assertEquals(1, rows.size());
            assertEquals("Muon,AdamW \"quoted\"", rows.get(0).get("optimizer"), "commons-csv quotes what needs it");
            assertEquals("0.875", rows.get(0).get("test_accuracy"));
            assertEquals("7", rows.get(0).get("seed"));
        }
    }

    /** What Replot redraws a figure from: the three CSVs read back as the runs that wrote them. */
    @Test
    void read_givesBackTheRunsOfOneModel(@TempDir Path dir) throws Exception {
        List<FashionMnist.Result> runs = List.of(run("AdamW", 1e-3, 1, 0.80), run("MuonAdamW", 1e-3, 1, 0.85),
                new FashionMnist.Result("cnn", "AdamW", 1e-3, 1, List.of(new FashionMnist.EpochPoint(1, 1, 0.5, 1, 1)),
                        List.of(2.0), 99));
        RunTables.writeEpochs(dir.resolve("e.csv"), runs);
        RunTables.writeSteps(dir.resolve("s.csv"), runs);
        RunTables.writeSummary(dir.resolve("m.csv"), RunTables.summarise(runs, 1e-3));
        List<FashionMnist.Result> back = RunTables.read(dir.resolve("e.csv"), dir.resolve("s.csv"),
                dir.resolve("m.csv"), "mlp");
        assertEquals(runs.subList(0, 2), back);
    }

    @Test
    void read_stepsMissingForARun_isADataErrorNamingIt(@TempDir Path dir) throws Exception {
        RunTables.writeEpochs(dir.resolve("e.csv"), List.of(run("AdamW", 1e-3, 1, 0.80)));
        RunTables.writeSteps(dir.resolve("s.csv"), List.of(run("AdamW", 1e-3, 2, 0.80)));
        DataError e = org.junit.jupiter.api.Assertions.assertThrows(DataError.class,
                () -> RunTables.read(dir.resolve("e.csv"), dir.resolve("s.csv"), null, "mlp"));
        assertEquals(dir.resolve("s.csv") + ": no steps of mlp, AdamW, lr 0.001, seed 1, which "
                + dir.resolve("e.csv") + " has", e.getMessage());
    }
}
