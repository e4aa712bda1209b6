package org.streambench.runner;

import org.HdrHistogram.Histogram;

import java.util.concurrent.atomic.LongAdder;

/** Hot-path recording: counters and HdrHistogram Recorders (µs). No per-message state. */
public final class Metrics {
    public static final int PUBLISH = 0, PUBLISH_CORRECTED = 1, PUBLISH_DELAY = 2, E2E = 3, E2E_CORRECTED = 4, E2E_CATCHUP = 5;
    public static final String[] NAMES = {"publish", "publishCorrected", "publishDelay", "endToEnd", "endToEndCorrected", "endToEndCatchUp"};
    public static final int N = NAMES.length;

    /** the publish columns (acknowledgement threads) and the end-to-end columns (receiving threads) */
    final StripedRecorder publish = new StripedRecorder(3), e2e = new StripedRecorder(3);
    public final LongAdder sent = new LongAdder(), acked = new LongAdder(), errors = new LongAdder(),
            received = new LongAdder(), e2eNegative = new LongAdder();
    /** acknowledged sends whose intended time lies in [windowFrom, windowUntil) (nanoTime): the measured phase */
    public final LongAdder ackedInWindow = new LongAdder();
    /** intended sends a schedule reset dropped because the sender was behind (see RateSchedule#behind) */
    public final LongAdder scheduleDropped = new LongAdder();
    public volatile long windowFrom = Long.MAX_VALUE, windowUntil = Long.MAX_VALUE;

    public Metrics() {}

    /** Send completion: times in nanoTime. */
    public void onSendComplete(long intendedNanos, long sendNanos, Throwable err) {
        if (err != null) { errors.increment(); return; }
        long now = System.nanoTime();
        acked.increment();
        if (intendedNanos >= windowFrom && intendedNanos < windowUntil) ackedInWindow.increment();
        publish.record(PUBLISH, Math.max(0, (now - sendNanos) / 1000), PUBLISH_CORRECTED, Math.max(0, (now - intendedNanos) / 1000),
                PUBLISH_DELAY, Math.max(0, (sendNanos - intendedNanos) / 1000));
    }

    /** A delivery: end-to-end from the header's send and intended times. */
    public void onReceive(long sendMicros, long intendedMicros, boolean catchUp) {
        long now = Clock.nowMicros();
        received.increment();
        long l = now - sendMicros;
        if (l < 0) { e2eNegative.increment(); l = 0; }
        if (catchUp) {
            e2e.record(E2E_CATCHUP - E2E, l);
        } else {
            e2e.record(0, l, E2E_CORRECTED - E2E, Math.max(0, now - intendedMicros));
        }
    }

    /**
     * Interval histograms since the last call, one array of N. The previous call's array may be passed back as
     * {@code recycle} once its reader is done with it (the runner's tick copies what it keeps): nothing is allocated
     * per tick then, so the 1-s tick adds no garbage that would lengthen the young-GC pauses the senders see.
     */
    public Histogram[] interval(Histogram[] recycle) {
        Histogram[] out = recycle != null && recycle.length == N ? recycle : new Histogram[N];
        publish.intervalInto(out, PUBLISH); // a recycled array's histograms are filled again; a new one's are created
        e2e.intervalInto(out, E2E);
        return out;
    }
}
