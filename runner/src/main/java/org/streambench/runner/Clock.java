package org.streambench.runner;

import java.time.Instant;

/** Epoch microseconds derived from nanoTime (monotonic within the process, calibrated once against the wall clock). */
public final class Clock {
    private static final long NANO_BASE;
    private static final long EPOCH_MICROS_BASE;

    static {
        Instant i = Instant.now();
        NANO_BASE = System.nanoTime();
        EPOCH_MICROS_BASE = i.getEpochSecond() * 1_000_000L + i.getNano() / 1000;
    }

    private Clock() {}

    public static long nowMicros() { return toEpochMicros(System.nanoTime()); }

    public static long toEpochMicros(long nanoTime) { return EPOCH_MICROS_BASE + (nanoTime - NANO_BASE) / 1000; }

    public static long nanoAtEpochMillis(long epochMs) { return NANO_BASE + (epochMs * 1000 - EPOCH_MICROS_BASE) * 1000; }

    public static String iso(long epochMicros) { return Instant.ofEpochMilli(epochMicros / 1000).toString(); }
}
