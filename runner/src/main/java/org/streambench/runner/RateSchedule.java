package org.streambench.runner;

/**
 * Open-loop schedule: the k-th message of a segment is intended at start + k / rate. Absolute times, so jitter of
 * a single wait does not accumulate into rate error; a sender that falls behind sends back-to-back until it has
 * caught up, and the lag is visible as publish delay and in the corrected latency. Used by one thread.
 */
public final class RateSchedule {
    private double nanosPerMsg;
    private long start;
    private long k;

    public RateSchedule(double rate, long startNanos) { reset(rate, startNanos); }

    /** starts a new segment at the given rate; rate <= 0 means "send nothing" */
    public void reset(double rate, long startNanos) {
        this.nanosPerMsg = rate > 0 ? 1e9 / rate : Double.POSITIVE_INFINITY;
        this.start = startNanos;
        this.k = 0;
    }

    /** intended send time of the next message (nanoTime base), Long.MAX_VALUE if the rate is 0 */
    public long next() {
        if (Double.isInfinite(nanosPerMsg)) return Long.MAX_VALUE;
        return start + (long) (k * nanosPerMsg);
    }

    public void advance() { k++; }

    public long count() { return k; }

    /** messages intended before {@code nowNanos} that have not been sent yet (the schedule's debt), 0 if none */
    public long behind(long nowNanos) {
        if (Double.isInfinite(nanosPerMsg) || nowNanos < start) return 0;
        long due = (long) ((nowNanos - start) / nanosPerMsg) + 1;
        return Math.max(0, due - k);
    }

    /** Waits until the next intended time (or until stop() says so); returns the intended time. */
    public long await(java.util.function.BooleanSupplier stop) {
        while (true) {
            long t = next();
            long now = System.nanoTime();
            if (t <= now) return t;
            if (stop.getAsBoolean()) return -1;
            long wait = t - now;
            java.util.concurrent.locks.LockSupport.parkNanos(Math.min(wait, 50_000_000L));
        }
    }
}
