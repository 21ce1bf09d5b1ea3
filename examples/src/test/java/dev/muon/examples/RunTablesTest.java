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
}
