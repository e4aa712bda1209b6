package org.streambench.runner;

/**
 * Whether the cluster has stopped answering (pure logic, the clock passed in): sends are in flight, and neither an
 * acknowledgement nor a send error has arrived for {@code limitMs}. A broker that died (a Pulsar broker shut down on
 * OutOfDirectMemoryError during a local max-rate search, 2026-11-29) leaves the client's sends pending without a
 * timeout; without this the run went on through every re-measurement, the flush and the drain wait until its deadline
 * (365 s of a run planned at 82 s), with nothing to measure.
 */
final class StallWatch {
    /** no acknowledgement or error for this long while sends are in flight: the run stops */
    static final long LIMIT_MS = 60_000;
    private final long limitNanos;
    private long lastProgress = -1, sinceNanos;

    StallWatch(long limitMs) {
        if (limitMs <= 0) throw new IllegalArgumentException("stall limit must be > 0 ms");
        this.limitNanos = limitMs * 1_000_000L;
    }

    /**
     * {@code progress}: acknowledgements plus send errors so far; {@code inFlight}: sends neither acknowledged nor
     * failed. Returns the whole seconds without progress once that reaches the limit with sends in flight, else -1.
     */
    long stalledSeconds(long progress, long inFlight, long nowNanos) {
        if (progress != lastProgress || inFlight <= 0) {
            lastProgress = progress;
            sinceNanos = nowNanos;
            return -1;
        }
        long quiet = nowNanos - sinceNanos;
        return quiet >= limitNanos ? quiet / 1_000_000_000L : -1;
    }
}
