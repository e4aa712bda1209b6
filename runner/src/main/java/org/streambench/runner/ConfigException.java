package org.streambench.runner;

/** Bad input: names the file and the field. Thrown before anything connects. */
public final class ConfigException extends RuntimeException {
    public ConfigException(String file, String field, String message) {
        super(file + ": field '" + field + "': " + message);
    }

    public ConfigException(String message) {
        super(message);
    }
}
