package org.streambench.runner;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.Property;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.regex.Pattern;

/**
 * Counts the client libraries' warnings and errors (not the runner's own lines), grouped by logger and message shape
 * (numbers and bracketed names folded), so that a reconnect storm appears in the result as a count and its most
 * frequent messages rather than as a gigabyte of log lines.
 */
final class ClientLogCounter extends AbstractAppender {
    static final long WARN_THRESHOLD = 1000;
    private static final int MAX_KEYS = 200;
    private static final Pattern BRACKETS = Pattern.compile("\\[[^\\]]*\\]"), NUMBERS = Pattern.compile("[0-9]+");
    private static ClientLogCounter installed;

    private final LongAdder warnings = new LongAdder(), errors = new LongAdder();
    private final Map<String, LongAdder> byShape = new ConcurrentHashMap<>();

    private ClientLogCounter() {
        super("client-log-counter", null, null, true, Property.EMPTY_ARRAY);
    }

    /** attaches the counter to log4j's root logger (at the root's level) */
    static synchronized void install() {
        if (installed != null) return;
        LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
        Configuration cfg = ctx.getConfiguration();
        ClientLogCounter c = new ClientLogCounter();
        c.start();
        cfg.addAppender(c);
        cfg.getRootLogger().addAppender(c, Level.WARN, null);
        ctx.updateLoggers();
        installed = c;
    }

    static String shape(String message) {
        String s = message == null ? "" : message;
        s = NUMBERS.matcher(BRACKETS.matcher(s).replaceAll("[…]")).replaceAll("#");
        return s.length() > 160 ? s.substring(0, 160) + "…" : s;
    }

    @Override
    public void append(LogEvent e) {
        if ("omb".equals(e.getLoggerName())) return;
        if (e.getLevel().isMoreSpecificThan(Level.ERROR)) errors.increment();
        else if (e.getLevel().isMoreSpecificThan(Level.WARN)) warnings.increment();
        else return;
        String name = e.getLoggerName() == null ? "" : e.getLoggerName();
        String key = name.substring(name.lastIndexOf('.') + 1) + ": " + shape(e.getMessage().getFormattedMessage());
        LongAdder a = byShape.get(key);
        if (a == null && byShape.size() < MAX_KEYS) a = byShape.computeIfAbsent(key, k -> new LongAdder());
        if (a != null) a.increment();
    }

    /** {"warnings": n, "errors": n, "top": [{"message", "count"}…]} of the installed counter (zeros if none) */
    static ObjectNode summary() {
        ObjectNode n = Fields.JSON.createObjectNode();
        ClientLogCounter c = installed;
        n.put("warnings", c == null ? 0 : c.warnings.sum());
        n.put("errors", c == null ? 0 : c.errors.sum());
        ArrayNode top = n.putArray("top");
        if (c != null) {
            List<Map.Entry<String, LongAdder>> l = new ArrayList<>(c.byShape.entrySet());
            l.sort((a, b) -> Long.compare(b.getValue().sum(), a.getValue().sum()));
            for (Map.Entry<String, LongAdder> en : l.subList(0, Math.min(5, l.size()))) {
                ObjectNode t = top.addObject();
                t.put("message", en.getKey());
                t.put("count", en.getValue().sum());
            }
        }
        return n;
    }

    /** a warning for the result when the clients logged a storm, else null */
    static String stormWarning() {
        ClientLogCounter c = installed;
        if (c == null) return null;
        long n = c.warnings.sum() + c.errors.sum();
        if (n < WARN_THRESHOLD) return null;
        ObjectNode s = summary();
        String most = s.withArray("top").isEmpty() ? "" : "; most frequent: " + s.withArray("top").get(0).path("message").asText()
                + " (" + s.withArray("top").get(0).path("count").asLong() + "×)";
        return "the client libraries logged " + n + " warnings and errors" + most;
    }
}
