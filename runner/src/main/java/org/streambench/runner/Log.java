package org.streambench.runner;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.time.Instant;

/**
 * The runner's own messages: progress lines on stderr, and (with --log) the same lines in the log file through the
 * log4j logger "omb", which shares the file's size cap with the client libraries' warnings.
 */
public final class Log {
    private static volatile Logger file;

    private Log() {}

    /** from now on, also write to the log file configured by log4j2-file.xml */
    static void toFile() { file = LogManager.getLogger("omb"); }

    private static void line(Level level, String tag, String msg, Throwable t) {
        synchronized (Log.class) {
            System.err.println(Instant.now() + " " + tag + " " + msg);
        }
        Logger f = file;
        if (f != null) {
            if (t != null) f.log(level, msg, t); else f.log(level, msg);
        }
    }

    public static void info(String msg) { line(Level.INFO, "INFO ", msg, null); }

    public static void warn(String msg) { line(Level.WARN, "WARN ", msg, null); }

    public static void error(String msg) { line(Level.ERROR, "ERROR", msg, null); }

    /** an error whose stack trace goes to the log file only (stderr, when a log file is given, gets the one line) */
    static void error(String msg, Throwable t) {
        if (file != null) line(Level.ERROR, "ERROR", msg, t);
        else {
            error(msg);
            t.printStackTrace();
        }
    }
}
