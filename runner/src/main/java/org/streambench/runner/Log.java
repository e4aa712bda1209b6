package org.streambench.runner;

import java.io.FileWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.time.Instant;

/** The runner's own messages: to stderr, and to the --log file if any (client libraries log there via log4j). */
public final class Log {
    private static PrintWriter file;

    private Log() {}

    static synchronized void toFile(String path) throws IOException {
        file = new PrintWriter(new FileWriter(path, true), true);
    }

    private static synchronized void line(String level, String msg) {
        String l = Instant.now() + " " + level + " " + msg;
        System.err.println(l);
        if (file != null) file.println(l);
    }

    public static void info(String msg) { line("INFO ", msg); }

    public static void warn(String msg) { line("WARN ", msg); }

    public static void error(String msg) { line("ERROR", msg); }
}
