package org.streambench.runner;

/**
 * Max-rate discovery by saturation (pure logic, no clock): the producers send as fast as the cluster takes their
 * sends, behind a bound on the sends in flight (as Kafka's producer perf test does with its buffer), and up to the
 * ceiling when there is one; the capacity is the rate the slowest side kept up with over the phase less its settle
 * seconds: the acknowledgements, and the tailing subscriptions' consumers (per subscription). The measured phase
 * then runs at {@code confirmFraction} of it and is judged like any max-rate measured phase ({@link StepJudge}, run
 * again lower when it does not hold, {@link RateSearch#measuredPhaseFailed}).
 *
 * <p>Why: a ladder of pass / fail steps of a few seconds ({@link RateSearch}) lands on one of a few rates, and one
 * step that passes or fails by a hair moves the result by up to the growth factor; the rate a saturated cluster
 * acknowledges is a mean over the whole phase, which moves with the cluster, not with a threshold.
 */
public final class Saturation {
    /** an acknowledged rate at this share of the ceiling has reached it (the send rule of {@link StepJudge}) */
    static final double CEILING_SHARE = StepJudge.MIN_SEND_FRACTION;
    /**
     * the senders' rate while saturating without a ceiling (msg/s): a schedule this fast never makes them wait, and
     * unlike an infinite rate it stays a number in the result's time series
     */
    static final double UNBOUNDED_RATE = 1e9;
    /** the default bound on sends in flight, in bytes of payload (Kafka's producer buffer is 32 MiB) */
    static final long DEFAULT_IN_FLIGHT_BYTES = 64L << 20;

    public final double seconds, ackRate, consumeRate, capacity, settled;
    public final boolean ceilingReached;

    private Saturation(double seconds, double ackRate, double consumeRate, double capacity, double settled,
                       boolean ceilingReached) {
        this.seconds = seconds;
        this.ackRate = ackRate;
        this.consumeRate = consumeRate;
        this.capacity = capacity;
        this.settled = settled;
        this.ceilingReached = ceilingReached;
    }

    /**
     * @param seconds        the judged seconds of the phase (after its settle seconds); > 0
     * @param acked          sends acknowledged over them
     * @param consumedPerSub messages each tailing subscription received over them (NaN: no consumers, or not known here)
     * @param ceiling        msg/s the phase could not exceed (+inf: none)
     * @param fraction       the share of the capacity the measured phase runs at
     */
    public static Saturation estimate(double seconds, long acked, double consumedPerSub, double ceiling, double fraction) {
        if (!(seconds > 0)) throw new IllegalArgumentException("a saturation phase needs judged seconds");
        if (!(fraction > 0 && fraction <= 1)) throw new IllegalArgumentException("confirm fraction must be in (0, 1]");
        double ack = acked / seconds;
        double consume = Double.isNaN(consumedPerSub) ? Double.NaN : Math.max(0, consumedPerSub) / seconds;
        double capacity = Double.isNaN(consume) ? ack : Math.min(ack, consume);
        boolean atCeiling = Double.isFinite(ceiling) && capacity >= CEILING_SHARE * ceiling;
        double settled = atCeiling ? ceiling : Math.max(1, Math.floor(fraction * capacity));
        return new Saturation(seconds, ack, consume, capacity, settled, atCeiling);
    }

    /**
     * The bound on sends in flight while saturating (msgs, this process) when the workload sets none: 64 MiB of
     * payload, and at most half a second of the ceiling (a bound the ceiling cannot fill is no bound), at least 1 000.
     */
    public static long defaultMaxInFlight(int messageSize, double ceiling) {
        long bytes = DEFAULT_IN_FLIGHT_BYTES / Math.max(1, messageSize);
        long c = Double.isFinite(ceiling) ? (long) Math.ceil(ceiling / 2) : Long.MAX_VALUE;
        return Math.max(1000, Math.min(bytes, c));
    }
}
