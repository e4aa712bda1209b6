package org.streambench.runner;

import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.WriterReaderPhaser;

import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A row of {@code width} interval histograms (µs) per recording thread, the 1-s tick adding up every thread's row.
 * Bounded by the number of threads, not messages: beyond {@link #MAX_OWN} threads (a fan-out run whose Kafka client
 * has one polling thread per consumer: thousands) threads share {@link #SHARED} rows of concurrent histograms, so
 * memory and the tick's work stay bounded by a constant.
 *
 * <p>A thread's row is guarded by its own WriterReaderPhaser (HdrHistogram's Recorder scheme: the reader swaps the
 * active and inactive rows and waits for writers already inside), and one record call may write several histograms of
 * the row inside one critical section: an acknowledgement's three publish histograms cost two atomic increments, not
 * six (three recorders), and one lookup of the thread's row, not three.
 *
 * <p>A thread finds its row in {@link #byThread}, a small table indexed by its thread id, before it asks the
 * ThreadLocal that assigns rows. Acknowledgements arrive on the clients' own threads, whose ThreadLocal maps can be
 * crowded: on the Pravega client's callback thread three ThreadLocal lookups per acknowledgement were 30 % of the
 * runner's CPU samples (JFR, 100 B events at the CPU limit; runner/bench/maxrate_vs_pravega_writer.py --client-cpus).
 */
final class StripedRecorder {
    static final int MAX_OWN = 64, SHARED = 16, TABLE = 256;

    /** one thread's row (or a shared row: concurrent histograms, since several threads write it) */
    private static final class Row {
        final WriterReaderPhaser phaser = new WriterReaderPhaser();
        volatile Histogram[] active;
        Histogram[] inactive; // the reader's, under the phaser's reader lock

        Row(int width, boolean shared) {
            active = histograms(width, shared);
            inactive = histograms(width, shared);
        }

        private static Histogram[] histograms(int width, boolean shared) {
            Histogram[] hs = new Histogram[width];
            for (int i = 0; i < width; i++) {
                hs[i] = shared ? new ConcurrentHistogram(3) : new Histogram(3);
                hs[i].setAutoResize(true);
            }
            return hs;
        }

        void record(int i, long v) {
            long c = phaser.writerCriticalSectionEnter();
            try {
                active[i].recordValue(v);
            } finally {
                phaser.writerCriticalSectionExit(c);
            }
        }

        void record(int i, long v, int j, long w) {
            long c = phaser.writerCriticalSectionEnter();
            try {
                Histogram[] a = active;
                a[i].recordValue(v);
                a[j].recordValue(w);
            } finally {
                phaser.writerCriticalSectionExit(c);
            }
        }

        void record(int i, long v, int j, long w, int k, long x) {
            long c = phaser.writerCriticalSectionEnter();
            try {
                Histogram[] a = active;
                a[i].recordValue(v);
                a[j].recordValue(w);
                a[k].recordValue(x);
            } finally {
                phaser.writerCriticalSectionExit(c);
            }
        }

        /** adds the samples since the last call to {@code into[from ..]} */
        void drainInto(Histogram[] into, int from) {
            phaser.readerLock();
            try {
                Histogram[] spent = inactive;
                for (Histogram h : spent) h.reset();
                inactive = active;
                active = spent;
                phaser.flipPhase();
            } finally {
                phaser.readerUnlock();
            }
            for (int i = 0; i < inactive.length; i++) into[from + i].add(inactive[i]);
        }
    }

    /** a thread and its row; final fields, so a racy read of the table sees either null or a whole entry */
    private static final class Slot {
        final Thread thread;
        final Row row;

        Slot(Thread thread, Row row) { this.thread = thread; this.row = row; }
    }

    private final int width;
    private final CopyOnWriteArrayList<Row> all = new CopyOnWriteArrayList<>();
    private final Row[] shared = new Row[SHARED];
    private final AtomicInteger threads = new AtomicInteger();
    private final Slot[] byThread = new Slot[TABLE];
    private final ThreadLocal<Row> local;

    StripedRecorder(int width) {
        this.width = width;
        local = ThreadLocal.withInitial(() -> {
            int n = threads.getAndIncrement();
            if (n < MAX_OWN) {
                Row r = new Row(width, false);
                all.add(r);
                return r;
            }
            synchronized (shared) {
                int s = n % SHARED;
                if (shared[s] == null) {
                    shared[s] = new Row(width, true);
                    all.add(shared[s]);
                }
                return shared[s];
            }
        });
    }

    void record(int i, long v) { row().record(i, v); }

    void record(int i, long v, int j, long w) { row().record(i, v, j, w); }

    void record(int i, long v, int j, long w, int k, long x) { row().record(i, v, j, w, k, x); }

    private Row row() {
        Thread t = Thread.currentThread();
        Slot s = byThread[(int) (t.getId() & (TABLE - 1))];
        return s != null && s.thread == t ? s.row : rowOf(t);
    }

    /** the ThreadLocal's answer, kept in the table if the thread's entry is free or held by a thread that ended */
    private Row rowOf(Thread t) {
        Row row = local.get();
        int i = (int) (t.getId() & (TABLE - 1));
        synchronized (byThread) {
            Slot s = byThread[i];
            if (s == null || (s.thread != t && !s.thread.isAlive())) byThread[i] = new Slot(t, row);
        }
        return row;
    }

    /** the thread whose row the table holds at the given thread's index (tests) */
    Thread cachedAt(Thread t) {
        Slot s = byThread[(int) (t.getId() & (TABLE - 1))];
        return s == null ? null : s.thread;
    }

    /**
     * The sum of every thread's samples since the previous call, one histogram per column, into {@code into} (each
     * reset first; its histograms are reused, nothing is allocated per tick) if it has the row's width.
     */
    Histogram[] interval(Histogram[] into) {
        Histogram[] out = into != null && into.length == width ? into : new Histogram[width];
        intervalInto(out, 0);
        return out;
    }

    /** as {@link #interval}, into {@code out[from .. from + width)}: a null there gets a new histogram */
    void intervalInto(Histogram[] out, int from) {
        for (int i = from; i < from + width; i++) {
            if (out[i] == null) out[i] = Histos.create();
            else out[i].reset();
        }
        for (Row r : all) r.drainInto(out, from);
    }
}
