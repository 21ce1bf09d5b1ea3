package dev.muon.examples.study;

import dev.muon.examples.DataError;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The results file: rows read back as written, a row cut short by a kill skipped, the next row on its own line. */
class StudyCsvTest {
    @TempDir
    Path dir;

    private static final StudySetting S = StudyFixtures.SETTING;

    @Test
    void appendThenRead_givesTheSameRuns() {
        Path csv = dir.resolve(StudyCsv.FILE);
        StudyResult adamw = StudyFixtures.result(S.cell(StudyArm.ADAMW, 2e-3, Double.NaN, 3), 4.5, 3.1, 2.6, 2.3,
                2.123456);
        StudyResult muon = StudyFixtures.result(S.cell(StudyArm.HYPERBALL, 2e-3, 1.6e-2, 1), 4.5, 3.0, Double.NaN,
                Double.NaN, Double.NaN);
        StudyCsv.append(csv, adamw);
        StudyCsv.append(csv, muon);

        StudyCsv.Contents back = StudyCsv.read(csv);
        assertEquals(List.of(), back.skippedLines());
        assertEquals(List.of(adamw.cell().key(), muon.cell().key()), List.copyOf(back.byKey().keySet()));
        StudyResult a = back.results().get(0);
        assertEquals(adamw.cell(), a.cell());
        assertArrayEquals(adamw.evalSteps(), a.evalSteps());
        assertArrayEquals(adamw.valLoss(), a.valLoss(), 1e-6);
        assertEquals(2.123456, a.finalValLoss(), 1e-6);
        assertEquals("test CPU", a.machine().cpu());
        assertEquals("abc", a.machine().commit());
        StudyResult m = back.results().get(1);
        assertTrue(m.diverged());
        assertTrue(Double.isNaN(m.finalValLoss()));
        assertEquals(1.6e-2, m.cell().muonLr());
    }

    @Test
    void aRowCutShort_isSkipped_andTheNextAppendStartsANewLine() throws IOException {
        Path csv = dir.resolve(StudyCsv.FILE);
        StudyResult first = StudyFixtures.straight(S.cell(StudyArm.ADAMW, 1e-3, Double.NaN, 1), 2.5);
        StudyResult second = StudyFixtures.straight(S.cell(StudyArm.ADAMW, 1e-3, Double.NaN, 2), 2.4);
        StudyCsv.append(csv, first);
        // What a kill in the middle of the second row's write leaves: part of a row, no line break.
        String row = StudyCsv.row(second);
        CutRow.append(csv, row, row.length() / 2);
        assertEquals(List.of(first.cell().key()), List.copyOf(StudyCsv.read(csv).byKey().keySet()));
        assertEquals(List.of(3), StudyCsv.read(csv).skippedLines());

        StudyCsv.append(csv, second);
        StudyCsv.Contents back = StudyCsv.read(csv);
        assertEquals(List.of(first.cell().key(), second.cell().key()), List.copyOf(back.byKey().keySet()));
        assertEquals(List.of(3), back.skippedLines());
        assertEquals(4, Files.readAllLines(csv).size());
    }

    @Test
    void aCellWrittenTwice_countsOnce_itsFirstRow() {
        Path csv = dir.resolve(StudyCsv.FILE);
        StudyCell cell = S.cell(StudyArm.MUON, 1e-3, 2e-3, 1);
        StudyCsv.append(csv, StudyFixtures.straight(cell, 2.5));
        StudyCsv.append(csv, StudyFixtures.straight(cell, 2.1));
        assertEquals(2, StudyCsv.read(csv).results().size());
        assertEquals(2.5, StudyCsv.read(csv).byKey().get(cell.key()).finalValLoss(), 1e-9);
    }

    @Test
    void anotherFilesHeader_isADataError_namingTheFile() throws IOException {
        Path csv = dir.resolve("other.csv");
        Files.writeString(csv, "optimizer,lr,seed\nadamw,0.001,1\n");
        DataError e = assertThrows(DataError.class, () -> StudyCsv.read(csv));
        assertTrue(e.getMessage().startsWith(csv + ": its header is not a study results file's"), e.getMessage());
    }

    @Test
    void aMissingFile_holdsNoRuns() {
        assertEquals(0, StudyCsv.read(dir.resolve("none.csv")).results().size());
    }
}
