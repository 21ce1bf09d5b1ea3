package dev.muon.djl;

import org.slf4j.ILoggerFactory;
import org.slf4j.IMarkerFactory;
import org.slf4j.Logger;
import org.slf4j.Marker;
import org.slf4j.event.Level;
import org.slf4j.helpers.BasicMDCAdapter;
import org.slf4j.helpers.BasicMarkerFactory;
import org.slf4j.helpers.LegacyAbstractLogger;
import org.slf4j.helpers.MessageFormatter;
import org.slf4j.spi.MDCAdapter;
import org.slf4j.spi.SLF4JServiceProvider;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An SLF4J provider for this module's tests that keeps every event in memory, so that a test can see what reached
 * SLF4J (DJL's logging), as opposed to {@code java.util.logging}. Found through {@code META-INF/services}.
 */
public final class RecordingLogs implements SLF4JServiceProvider {
    /** One event. */
    public record Event(String logger, Level level, String message) {
    }

    private static final List<Event> EVENTS = new ArrayList<>();
    private final ConcurrentHashMap<String, Logger> loggers = new ConcurrentHashMap<>();
    private final ILoggerFactory factory = name -> loggers.computeIfAbsent(name, RecordingLogger::new);
    private final IMarkerFactory markers = new BasicMarkerFactory();
    private final MDCAdapter mdc = new BasicMDCAdapter();

    /**
     * The events so far, of one logger.
     *
     * @param logger the logger's name
     * @return the events
     */
    public static List<Event> of(String logger) {
        synchronized (EVENTS) {
            return EVENTS.stream().filter(e -> e.logger().equals(logger)).toList();
        }
    }

    /** Forgets every event. */
    public static void clear() {
        synchronized (EVENTS) {
            EVENTS.clear();
        }
    }

    @Override
    public ILoggerFactory getLoggerFactory() {
        return factory;
    }

    @Override
    public IMarkerFactory getMarkerFactory() {
        return markers;
    }

    @Override
    public MDCAdapter getMDCAdapter() {
        return mdc;
    }

    @Override
    public String getRequestedApiVersion() {
        return "2.0.99";
    }

    @Override
    public void initialize() {
    }

    /** Keeps INFO and above; DJL's debug lines are not kept. */
    private static final class RecordingLogger extends LegacyAbstractLogger {
        RecordingLogger(String name) {
            this.name = name;
        }

        @Override
        protected String getFullyQualifiedCallerName() {
            return null;
        }

        @Override
        protected void handleNormalizedLoggingCall(Level level, Marker marker, String pattern, Object[] arguments,
                                                   Throwable throwable) {
            synchronized (EVENTS) {
                EVENTS.add(new Event(name, level, MessageFormatter.basicArrayFormat(pattern, arguments)));
            }
        }

        @Override
        public boolean isTraceEnabled() {
            return false;
        }

        @Override
        public boolean isDebugEnabled() {
            return false;
        }

        @Override
        public boolean isInfoEnabled() {
            return true;
        }

        @Override
        public boolean isWarnEnabled() {
            return true;
        }

        @Override
        public boolean isErrorEnabled() {
            return true;
        }
    }
}
