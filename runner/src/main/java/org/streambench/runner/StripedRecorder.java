package org.streambench.runner;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.SingleWriterRecorder;

import java.util.concurrent.CopyOnWriteArrayList;

/**
 * One single-writer HdrHistogram recorder per recording thread (no shared atomic counters on the hot path);
 * the 1-s tick adds up every thread's interval histogram. Bounded by the number of threads, not messages.
 */
final class StripedRecorder {
    private final CopyOnWriteArrayList<SingleWriterRecorder> all = new CopyOnWriteArrayList<>();
    private final ThreadLocal<SingleWriterRecorder> local = ThreadLocal.withInitial(() -> {
        SingleWriterRecorder r = new SingleWriterRecorder(3);
        all.add(r);
        return r;
    });

    void record(long value) { local.get().recordValue(value); }

    // the interval histogram each recorder handed out last time, handed back next time (no allocation per tick)
    private final java.util.Map<SingleWriterRecorder, Histogram> spare = new java.util.IdentityHashMap<>();

    /** The sum of every thread's samples since the previous call, into {@code into} (reset first) if given. */
    Histogram interval(Histogram into) {
        Histogram sum = into != null ? into : Histos.create();
        sum.reset();
        for (SingleWriterRecorder r : all) {
            Histogram h = r.getIntervalHistogram(spare.get(r));
            sum.add(h);
            spare.put(r, h);
        }
        return sum;
    }
}
