package org.streambench.runner;

/**
 * Max-rate discovery as a search over step verdicts (pure logic, no clock): double the rate while steps pass,
 * bisect once one has failed, and stop when the bracket is within 5 % or the step budget is spent. A failed step is
 * run again at the same rate (up to {@code retries} times) before the search turns down, so that one noisy step (a
 * cold JVM, a fresh topic's first segment, a neighbour's burst) cannot decide the result.
 */
final class RateSearch {
    private final int maxSteps, retries;
    private double lo = 0, hi = Double.POSITIVE_INFINITY, current;
    private int steps, failuresAtCurrent;
    private boolean done;

    RateSearch(double initialRate, int maxSteps, int retries) {
        if (initialRate <= 0) throw new IllegalArgumentException("initial rate must be > 0");
        this.current = initialRate;
        this.maxSteps = maxSteps;
        this.retries = Math.max(0, retries);
    }

    /** the rate (msg/s, all processes) of the step to run now */
    double current() { return current; }

    boolean done() { return done; }

    int steps() { return steps; }

    /** true when the step about to run repeats a failed step at the same rate */
    boolean retrying() { return failuresAtCurrent > 0; }

    /** the highest rate a step accepted so far (0: none) */
    double accepted() { return lo; }

    /** the lowest rate a step rejected for good so far (+inf: none) */
    double rejected() { return hi; }

    /** Records the verdict of the step just run at {@link #current()}; returns true when the search is over. */
    boolean record(boolean pass) {
        if (done) throw new IllegalStateException("search is over");
        steps++;
        if (pass) {
            lo = Math.max(lo, current);
            failuresAtCurrent = 0;
        } else if (failuresAtCurrent < retries && steps < maxSteps) {
            failuresAtCurrent++;
            return false; // the same rate once more
        } else {
            hi = Math.min(hi, current);
            failuresAtCurrent = 0;
        }
        if (steps >= maxSteps || (!Double.isInfinite(hi) && lo > 0 && hi / lo <= 1.05)) {
            done = true;
            return true;
        }
        current = Double.isInfinite(hi) ? current * 2 : (lo + hi) / 2;
        return false;
    }

    /** the rate the measured phase runs at: the highest accepted rate, or (none accepted) half the lowest rejected */
    double settled() { return lo > 0 ? lo : Math.max(1, hi / 2); }
}
