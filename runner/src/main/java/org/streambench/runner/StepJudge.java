package org.streambench.runner;

import java.util.ArrayList;
import java.util.List;

/**
 * Whether a system sustained a rate over a window of per-second samples (pure logic). Used for each step of max-rate
 * discovery, and for the measured phase of every run. A rate is sustained when:
 * <ul>
 *   <li>the producers issued their sends on schedule: send rate >= 97 % of the target (sends the client would not take,
 *       e.g. a full Kafka buffer blocking send(), show up here and in the publish delay);</li>
 *   <li>the schedule lag stayed small: publish-delay p99 below the bound;</li>
 *   <li>the sends in flight (sent, not yet acknowledged) did not grow: their least-squares trend over the window adds up
 *       to at most 5 % of the window's messages (at least {@code floor} messages), and they never exceeded one
 *       window's worth of messages;</li>
 *   <li>likewise the consumers' backlog (per tailing subscription).</li>
 * </ul>
 * In-flight counts alone cannot fail on a client whose buffer caps them (Kafka's 32 MiB buffer.memory), which is why the
 * producer side is judged by its schedule too.
 */
public final class StepJudge {  // public: bench/PlainWriterLoop judges its steps the same way
    static final double MIN_SEND_FRACTION = 0.97, MAX_GROWTH_FRACTION = 0.05;

    public static final class Verdict {
        public boolean pass;
        public double sendRate, inFlightGrowth, backlogGrowth;
        public long maxInFlight, maxBacklog, delayP99Micros;
        public final List<String> reasons = new ArrayList<>();
    }

    private StepJudge() {}

    /**
     * @param targetRate msg/s the producers were told to send (all of this process's producers)
     * @param seconds    length of the judged window
     * @param sent       messages sent in the window
     * @param inFlight   per-second samples of sends in flight over the window (first = window start)
     * @param backlog    per-second samples of the backlog summed over tailing subscriptions (empty: no consumers)
     * @param subs       tailing subscriptions (the backlog bound scales with them)
     * @param delayP99Micros publish-delay p99 over the window
     * @param maxDelayMicros the bound on it
     */
    public static Verdict judge(double targetRate, double seconds, long sent, long[] inFlight, long[] backlog, int subs,
                         long delayP99Micros, long maxDelayMicros) {
        Verdict v = new Verdict();
        double windowMsgs = targetRate * seconds;
        double floor = Math.max(500, 0.1 * targetRate);
        v.sendRate = seconds > 0 ? sent / seconds : 0;
        v.delayP99Micros = delayP99Micros;
        if (v.sendRate < MIN_SEND_FRACTION * targetRate)
            v.reasons.add(String.format("sent %.0f msg/s, below %.0f %% of %.0f", v.sendRate, 100 * MIN_SEND_FRACTION, targetRate));
        if (delayP99Micros >= maxDelayMicros)
            v.reasons.add(String.format("publish delay p99 %.1f ms >= %.1f ms", delayP99Micros / 1000.0, maxDelayMicros / 1000.0));
        v.inFlightGrowth = trend(inFlight) * Math.max(1, inFlight.length - 1);
        v.maxInFlight = max(inFlight);
        double bound = Math.max(floor, MAX_GROWTH_FRACTION * windowMsgs);
        if (v.inFlightGrowth > bound)
            v.reasons.add(String.format("in-flight sends grew by %.0f (bound %.0f)", v.inFlightGrowth, bound));
        if (v.maxInFlight > Math.max(floor, windowMsgs))
            v.reasons.add(String.format("in-flight sends reached %d, more than the window's %.0f messages", v.maxInFlight, windowMsgs));
        if (backlog.length > 0 && subs > 0) {
            v.backlogGrowth = trend(backlog) * Math.max(1, backlog.length - 1);
            v.maxBacklog = max(backlog);
            double bb = subs * bound;
            if (v.backlogGrowth > bb)
                v.reasons.add(String.format("consumer backlog grew by %.0f (bound %.0f)", v.backlogGrowth, bb));
            if (v.maxBacklog > subs * Math.max(floor, windowMsgs))
                v.reasons.add(String.format("consumer backlog reached %d, more than the window's %.0f messages per subscription",
                        v.maxBacklog, windowMsgs));
        }
        v.pass = v.reasons.isEmpty();
        return v;
    }

    /**
     * The rate (msg/s) the slowest side kept up with over a judged window of {@code seconds}: the send rate, less the
     * in-flight growth per second (the acknowledgements' rate) and the backlog growth per subscription per second
     * (the consumers' rate), whichever is lowest. NaN for an empty window.
     */
    public static double keptUpRate(Verdict v, double seconds, int subs) {
        if (!(seconds > 0)) return Double.NaN;
        double r = v.sendRate;
        if (v.inFlightGrowth > 0) r = Math.min(r, v.sendRate - v.inFlightGrowth / seconds);
        if (subs > 0 && v.backlogGrowth > 0) r = Math.min(r, v.sendRate - v.backlogGrowth / (subs * seconds));
        return r;
    }

    /** least-squares slope per sample of y over its index (0 for fewer than 2 samples) */
    static double trend(long[] y) {
        int n = y.length;
        if (n < 2) return 0;
        double mx = (n - 1) / 2.0, my = 0;
        for (long v : y) my += v;
        my /= n;
        double sxy = 0, sxx = 0;
        for (int i = 0; i < n; i++) { sxy += (i - mx) * (y[i] - my); sxx += (i - mx) * (i - mx); }
        return sxy / sxx;
    }

    static long max(long[] y) {
        long m = 0;
        for (long v : y) m = Math.max(m, v);
        return m;
    }
}
