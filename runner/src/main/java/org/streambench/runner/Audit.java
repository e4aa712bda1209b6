package org.streambench.runner;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/** Message audit for one subscription across all producers of the run (global producer ids). */
public final class Audit {
    private final SeqTracker[] trackers;
    private final long[][] lastSeqPerPartition; // [producer][partition] (-1 = none)
    private final LongAdder received = new LongAdder();
    private final AtomicLong outOfOrder = new AtomicLong();
    private final AtomicLong foreign = new AtomicLong();
    public final String name;

    public Audit(String name, int producers, int partitions) {
        this.name = name;
        trackers = new SeqTracker[producers];
        lastSeqPerPartition = new long[producers][];
        for (int i = 0; i < producers; i++) {
            trackers[i] = new SeqTracker();
            lastSeqPerPartition[i] = new long[Math.max(1, partitions)];
            java.util.Arrays.fill(lastSeqPerPartition[i], -1L);
        }
    }

    /** Records one delivery; partition may be -1 if unknown. Returns false for a duplicate or foreign message. */
    public boolean record(int producerId, long seq, int partition) {
        received.increment();
        if (producerId < 0 || producerId >= trackers.length) { foreign.incrementAndGet(); return false; }
        SeqTracker t = trackers[producerId];
        boolean first;
        synchronized (t) {
            first = t.record(seq);
            if (partition >= 0) {
                long[] last = lastSeqPerPartition[producerId];
                int p = partition % last.length;
                if (seq < last[p]) outOfOrder.incrementAndGet();
                else last[p] = seq;
            }
        }
        return first;
    }

    public void recordForeign() { received.increment(); foreign.incrementAndGet(); }

    public long received() { return received.sum(); }

    public long unique() {
        long u = 0;
        for (SeqTracker t : trackers) synchronized (t) { u += t.unique(); }
        return u;
    }

    public long duplicated() {
        long d = 0;
        for (SeqTracker t : trackers) synchronized (t) { d += t.duplicated(); }
        return d;
    }

    public long outOfOrder() { return outOfOrder.get(); }

    public long foreign() { return foreign.get(); }
}
