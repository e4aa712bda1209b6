package org.streambench.runner;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import org.HdrHistogram.SingleWriterRecorder;

import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One single-writer HdrHistogram recorder per recording thread (no shared atomic counters on the hot path);
 * the 1-s tick adds up every thread's interval histogram. Bounded by the number of threads, not messages.
 * Beyond {@link #MAX_OWN} threads (a fan-out run whose Kafka client has one polling thread per consumer: thousands)
 * threads share {@link #SHARED} multi-writer recorders, so memory and the tick's work stay bounded by a constant.
 */
final class StripedRecorder {
    static final int MAX_OWN = 64, SHARED = 16;

    private interface Sink { void record(long v); }

    private final CopyOnWriteArrayList<SingleWriterRecorder> all = new CopyOnWriteArrayList<>();
    private final Recorder[] shared = new Recorder[SHARED];
    private final AtomicInteger threads = new AtomicInteger();
    private final ThreadLocal<Sink> local = ThreadLocal.withInitial(() -> {
        int n = threads.getAndIncrement();
        if (n < MAX_OWN) {
            SingleWriterRecorder r = new SingleWriterRecorder(3);
            all.add(r);
            return r::recordValue;
        }
        Recorder r = shared[n % SHARED];
        return r::recordValue;
    });

    StripedRecorder() {
        for (int i = 0; i < SHARED; i++) shared[i] = new Recorder(3);
    }

    void record(long value) { local.get().record(value); }

    // the interval histogram each recorder handed out last time, handed back next time (no allocation per tick)
    private final java.util.Map<Object, Histogram> spare = new java.util.IdentityHashMap<>();

    /** The sum of every thread's samples since the previous call, into {@code into} (reset first) if given. */
    Histogram interval(Histogram into) {
        Histogram sum = into != null ? into : Histos.create();
        sum.reset();
        for (SingleWriterRecorder r : all) {
            Histogram h = r.getIntervalHistogram(spare.get(r));
            sum.add(h);
            spare.put(r, h);
        }
        if (threads.get() > MAX_OWN) {
            for (Recorder r : shared) {
                Histogram h = r.getIntervalHistogram(spare.get(r));
                sum.add(h);
                spare.put(r, h);
            }
        }
        return sum;
    }
}
