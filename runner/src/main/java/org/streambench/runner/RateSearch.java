package org.streambench.runner;

/**
 * Max-rate discovery as a search over step verdicts (pure logic, no clock): multiply the rate by the growth factor
 * (2 unless the workload sets {@code growthFactor}) while steps pass, bisect once one has failed, and stop when the bracket is within 5 % or the step budget is spent. A failed step is
 * run again at the same rate (up to {@code retries} times) before the search turns down, so that one noisy step (a
 * cold JVM, a fresh topic's first segment, a neighbour's burst) cannot decide the result.
 *
 * <p>A step is judged over seconds; the measured phase after it over the whole test. When the measured phase at the
 * settled rate does not hold, {@link #measuredPhaseFailed} lowers the settled rate (by {@link #REMEASURE_FACTOR}, or
 * to below what the slowest side kept up with) for another measured phase, a bounded number of times: the rate
 * reported is one a whole measured phase sustained.
 */
public final class RateSearch {  // public: bench/PlainWriterLoop runs the same search
    private final int maxSteps, retries;
    private final double growth, ceiling;
    private double lo = 0, hi = Double.POSITIVE_INFINITY, current;
    /** the rate of a measured phase after one that did not hold, relative to that one's */
    static final double REMEASURE_FACTOR = 0.8;
    /** the share of the rate the slowest side kept up with that the next measured phase runs at, when that is lower */
    static final double KEPT_UP_MARGIN = 0.9;
    /** no measured phase runs again below this share of the one that failed */
    static final double REMEASURE_FLOOR = 0.25;
    private int steps, failuresAtCurrent, remeasures;
    private double lowered = 0;
    private boolean done;

    public RateSearch(double initialRate, int maxSteps, int retries) {
        this(initialRate, maxSteps, retries, 2.0);
    }

    /**
     * {@code growth}: the factor between a passed step and the next while no step has failed. Below 2 the first
     * failed step lies at most (growth - 1) above the highest passed one, so a cluster is overloaded less before the
     * bisection starts (and the search needs more steps to reach the same rate).
     */
    public RateSearch(double initialRate, int maxSteps, int retries, double growth) {
        this(initialRate, maxSteps, retries, growth, Double.POSITIVE_INFINITY);
    }

    /**
     * {@code ceiling}: no step runs above it (msg/s). A passed step at the ceiling ends the search there
     * ({@link #ceilingReached()}): the system sustained at least that much, how much more is not known.
     */
    public RateSearch(double initialRate, int maxSteps, int retries, double growth, double ceiling) {
        if (initialRate <= 0) throw new IllegalArgumentException("initial rate must be > 0");
        if (!(growth > 1.05)) throw new IllegalArgumentException("growth factor must be > 1.05");
        if (!(ceiling > 0)) throw new IllegalArgumentException("ceiling must be > 0");
        this.current = Math.min(initialRate, ceiling);
        this.maxSteps = maxSteps;
        this.retries = Math.max(0, retries);
        this.growth = growth;
        this.ceiling = ceiling;
    }

    /**
     * A search that is over, settled at {@code rate} without steps (a {@link Saturation} estimate, or the ceiling):
     * {@link #measuredPhaseFailed} lowers it like any other when its measured phase does not hold.
     */
    static RateSearch settledAt(double rate, double ceiling) {
        RateSearch s = new RateSearch(Math.min(rate, ceiling), 2, 0, 2.0, ceiling);
        s.lo = Math.min(rate, ceiling);
        s.done = true;
        return s;
    }

    /**
     * true when a step at the ceiling passed and the measured phase there held: the settled rate is a lower bound of
     * what the system sustains. A measured phase at the ceiling that did not hold takes it back (the rate run again
     * lower is a measurement like any other, not a bound).
     */
    public boolean ceilingReached() { return lo >= ceiling && lowered == 0; }

    /** the rate (msg/s, all processes) of the step to run now */
    public double current() { return current; }

    public boolean done() { return done; }

    public int steps() { return steps; }

    /** true when the step about to run repeats a failed step at the same rate */
    public boolean retrying() { return failuresAtCurrent > 0; }

    /** the highest rate a step accepted so far (0: none) */
    public double accepted() { return lo; }

    /** the lowest rate a step rejected for good so far (+inf: none) */
    public double rejected() { return hi; }

    /** Records the verdict of the step just run at {@link #current()}; returns true when the search is over. */
    public boolean record(boolean pass) {
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
        if (steps >= maxSteps || (!Double.isInfinite(hi) && lo > 0 && hi / lo <= 1.05) || lo >= ceiling) {
            done = true;
            return true;
        }
        current = Double.isInfinite(hi) ? Math.min(ceiling, current * growth) : (lo + hi) / 2;
        return false;
    }

    /**
     * The measured phase at {@link #settled()} did not hold. Returns true, with the settled rate lowered, while fewer
     * than {@code max} measured phases have been rejected; false (nothing changed) once the budget is spent.
     *
     * <p>{@code keptUp}: the rate (msg/s) the slowest of the senders, the acknowledgements and the consumers kept up
     * with over the failed phase ({@link StepJudge#keptUpRate}; NaN: not known). The next phase runs at
     * {@link #REMEASURE_FACTOR} of the failed rate, or at {@link #KEPT_UP_MARGIN} of {@code keptUp} when that is lower,
     * never below {@link #REMEASURE_FLOOR} of the failed rate: a phase whose consumers kept up with only 60 % of it is
     * not run again at 80 % to fail once more.
     */
    boolean measuredPhaseFailed(int max, double keptUp) {
        if (!done) throw new IllegalStateException("the search is not over");
        if (remeasures >= max) return false;
        double failed = settled();
        hi = Math.min(hi, failed);
        double next = failed * REMEASURE_FACTOR;
        if (keptUp > 0 && Double.isFinite(keptUp)) next = Math.min(next, KEPT_UP_MARGIN * keptUp);
        lowered = Math.max(1, Math.max(REMEASURE_FLOOR * failed, next));
        remeasures++;
        return true;
    }

    /** {@link #measuredPhaseFailed(int, double)} with nothing known of what kept up */
    boolean measuredPhaseFailed(int max) { return measuredPhaseFailed(max, Double.NaN); }

    /** how many measured phases were rejected and run again lower */
    int remeasures() { return remeasures; }

    /**
     * The rate the measured phase runs at: the highest accepted rate, or (none accepted) half the lowest rejected;
     * below that after a measured phase that did not hold.
     */
    double settled() { return lowered > 0 ? lowered : lo > 0 ? lo : Math.max(1, hi / 2); }
}
