package dev.muon;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * The records one logger of ours writes while this is open: {@code System.Logger} goes to java.util.logging
 * here (muon-core's tests have no other provider), so a handler on the logger's name sees each line.
 */
final class CapturedLog implements AutoCloseable {
    private final Logger logger;
    private final List<LogRecord> records = new ArrayList<>();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord record) {
            synchronized (records) {
                records.add(record);
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    /** Starts capturing the records of the logger named {@code name}, from INFO up. */
    CapturedLog(String name) {
        logger = Logger.getLogger(name);
        handler.setLevel(Level.ALL);
        logger.addHandler(handler);
    }

    /** The messages captured so far at {@code level} or above. */
    List<String> messages(Level level) {
        synchronized (records) {
            return records.stream().filter(r -> r.getLevel().intValue() >= level.intValue())
                    .map(LogRecord::getMessage).toList();
        }
    }

    @Override
    public void close() {
        logger.removeHandler(handler);
    }
}
