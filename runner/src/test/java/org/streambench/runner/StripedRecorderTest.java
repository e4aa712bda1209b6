package org.streambench.runner;

import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class StripedRecorderTest {
    @Test
    void oneCallWritesEachValueIntoItsOwnColumn() {
        StripedRecorder r = new StripedRecorder(3);
        r.record(0, 10, 1, 20, 2, 30);
        r.record(2, 40, 0, 50);
        r.record(1, 60);
        Histogram[] h = r.interval(null);
        assertEquals(3, h.length);
        assertEquals(2, h[0].getTotalCount());
        assertEquals(1, h[0].getCountAtValue(10));
        assertEquals(1, h[0].getCountAtValue(50));
        assertEquals(2, h[1].getTotalCount());
        assertEquals(1, h[1].getCountAtValue(60));
        assertEquals(2, h[2].getTotalCount());
        assertEquals(1, h[2].getCountAtValue(40));
    }

    @Test
    void intervalsTakenWhileThreadsRecordLoseAndRepeatNothing() throws Exception {
        // the tick swaps each row while its thread writes: every sample lands in exactly one interval, in its column,
        // for own rows and (more threads than MAX_OWN) shared rows alike
        StripedRecorder r = new StripedRecorder(3);
        int threads = StripedRecorder.MAX_OWN + 6, each = 20_000;
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            ts[t] = new Thread(() -> {
                for (int i = 0; i < each; i++) r.record(0, 100, 1, 200, 2, 300);
            });
            ts[t].start();
        }
        long[] got = new long[3];
        Histogram[] recycle = null;
        boolean running = true;
        while (running) {
            running = false;
            for (Thread t : ts) running |= t.isAlive();
            recycle = r.interval(recycle);
            for (int c = 0; c < 3; c++) {
                assertEquals(recycle[c].getTotalCount(), recycle[c].getCountAtValue(100 * (c + 1)), "column " + c);
                got[c] += recycle[c].getTotalCount();
            }
        }
        for (Thread t : ts) t.join();
        recycle = r.interval(recycle);
        for (int c = 0; c < 3; c++) got[c] += recycle[c].getTotalCount();
        for (int c = 0; c < 3; c++) assertEquals((long) threads * each, got[c], "column " + c);
    }
}
