package org.streambench.runner;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Set;

/** Strict readers over a parsed YAML/JSON tree: every error names the file and the field path. */
final class Fields {
    static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    static final ObjectMapper JSON = new ObjectMapper();

    private final String file;
    private final ObjectNode node;
    private final String prefix;

    Fields(String file, ObjectNode node, String prefix) {
        this.file = file;
        this.node = node;
        this.prefix = prefix;
    }

    static ObjectNode readYamlObject(String file) {
        String text;
        try {
            text = Files.readString(Path.of(file));
        } catch (NoSuchFileException e) {
            throw new ConfigException(file + ": file not found");
        } catch (IOException e) {
            throw new ConfigException(file + ": cannot read: " + e.getMessage());
        }
        JsonNode n;
        try {
            n = YAML.readTree(text);
        } catch (IOException e) {
            String msg = e.getMessage() == null ? e.toString() : e.getMessage().split("\n")[0];
            throw new ConfigException(file + ": not valid YAML: " + msg);
        }
        if (n == null || n.isMissingNode() || n.isNull()) throw new ConfigException(file + ": empty file");
        if (!n.isObject()) throw new ConfigException(file + ": top level must be a mapping, got " + kind(n));
        return (ObjectNode) n;
    }

    static String kind(JsonNode n) {
        if (n == null || n.isNull()) return "null";
        if (n.isTextual()) return "string \"" + n.asText() + "\"";
        if (n.isBoolean()) return "boolean " + n.asText();
        if (n.isIntegralNumber()) return "integer " + n.asText();
        if (n.isNumber()) return "number " + n.asText();
        if (n.isArray()) return "list";
        if (n.isObject()) return "mapping";
        return n.getNodeType().toString().toLowerCase();
    }

    String file() { return file; }

    ObjectNode node() { return node; }

    String path(String key) { return prefix.isEmpty() ? key : prefix + "." + key; }

    ConfigException error(String key, String message) { return new ConfigException(file, path(key), message); }

    void rejectUnknown(Set<String> known) {
        for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!known.contains(k)) {
                String hint = closest(k, known);
                throw error(k, "unknown field" + (hint == null ? "" : " (did you mean '" + hint + "'?)")
                        + "; known fields: " + String.join(", ", new java.util.TreeSet<>(known)));
            }
        }
    }

    static String closest(String k, Set<String> known) {
        String best = null;
        int bestD = Integer.MAX_VALUE;
        for (String c : known) {
            int d = distance(k.toLowerCase(), c.toLowerCase());
            if (d < bestD) { bestD = d; best = c; }
        }
        return bestD <= Math.max(2, k.length() / 4) ? best : null;
    }

    private static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1], cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) prev[j] = j;
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int c = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + c);
            }
            int[] t = prev; prev = cur; cur = t;
        }
        return prev[b.length()];
    }

    boolean has(String key) {
        JsonNode v = node.get(key);
        return v != null && !v.isNull();
    }

    String string(String key, String dflt) {
        JsonNode v = node.get(key);
        if (v == null || v.isNull()) return dflt;
        if (!v.isTextual()) {
            if (v.isNumber() || v.isBoolean()) return v.asText(); // YAML scalars: OMB's Jackson coerces these too
            throw error(key, "expected a string, got " + kind(v));
        }
        return v.asText();
    }

    long integer(String key, long dflt, long min, long max) {
        JsonNode v = node.get(key);
        if (v == null || v.isNull()) return dflt;
        if (!v.isIntegralNumber()) throw error(key, "expected an integer, got " + kind(v));
        if (!v.canConvertToLong()) throw error(key, "integer out of range: " + v.asText());
        long x = v.asLong();
        if (x < min || x > max) throw error(key, "must be between " + min + " and " + max + ", got " + x);
        return x;
    }

    double number(String key, double dflt, double min, double max) {
        JsonNode v = node.get(key);
        if (v == null || v.isNull()) return dflt;
        if (!v.isNumber()) throw error(key, "expected a number, got " + kind(v));
        double x = v.asDouble();
        if (!(x >= min && x <= max)) throw error(key, "must be between " + min + " and " + max + ", got " + v.asText());
        return x;
    }

    boolean bool(String key, boolean dflt) {
        JsonNode v = node.get(key);
        if (v == null || v.isNull()) return dflt;
        if (!v.isBoolean()) throw error(key, "expected true or false, got " + kind(v));
        return v.asBoolean();
    }

    Fields object(String key) {
        JsonNode v = node.get(key);
        if (v == null || v.isNull()) return new Fields(file, JSON.createObjectNode(), path(key));
        if (!v.isObject()) throw error(key, "expected a mapping, got " + kind(v));
        return new Fields(file, (ObjectNode) v, path(key));
    }
}
