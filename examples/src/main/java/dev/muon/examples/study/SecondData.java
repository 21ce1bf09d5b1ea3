package dev.muon.examples.study;

import dev.muon.examples.CharCorpus;
import dev.muon.examples.DataError;
import org.bytedeco.pytorch.Tensor;

import java.nio.file.Path;
import java.util.Locale;

/**
 * One corpus of the second study, ready for its runs: the text split by headword, its fixed validation windows
 * (the same for every run on it) and the file's name for the rows. Shared by the sweep's workers, which only read
 * it.
 *
 * @param id         {@code gcide} or {@code foldoc}, as cells name it
 * @param corpus     the text
 * @param validation the validation windows, [windows, context + 1] token ids
 * @param file       the dictionary file's name
 */
record SecondData(String id, CharCorpus corpus, Tensor validation, String file) {
    /**
     * A loaded corpus with its validation windows at a scale.
     *
     * @param id     the corpus id
     * @param corpus the loaded text
     * @param file   the file it came from
     * @param option the option that named it, for the message of a text too short
     * @param scale  the context and the number of windows
     * @return the data
     * @throws DataError if the validation text is shorter than one window
     */
    static SecondData of(String id, CharCorpus corpus, Path file, String option, SecondScale scale) {
        if (corpus.validationLength() < scale.context() + 1) {
            throw new DataError(option + " " + file + ": its validation text (" + corpus.validationLength()
                    + " characters) is shorter than one window of " + (scale.context() + 1));
        }
        return new SecondData(id, corpus, corpus.evenValidationWindows(scale.validationWindows(), scale.context()),
                file.getFileName().toString());
    }

    /** The corpus in one line, for the sweep's output. */
    String describe() {
        return String.format(Locale.ROOT, "%s: %s; %,d training and %,d validation characters, %d distinct bytes",
                id, corpus.source(), corpus.trainLength(), corpus.validationLength(), corpus.vocabularySize());
    }
}
