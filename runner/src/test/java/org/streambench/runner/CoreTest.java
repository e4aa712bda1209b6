package org.streambench.runner;

import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

class CoreTest {
    // ---------------- rate schedule ----------------
    @Test
    void scheduleIsAbsoluteAndExact() {
        RateSchedule s = new RateSchedule(1000, 5_000_000_000L);
        for (int k = 0; k < 100_000; k++) {
            assertEquals(5_000_000_000L + k * 1_000_000L, s.next());
            s.advance();
        }
        s.reset(3, 0);
        s.advance(); s.advance(); s.advance();
        assertEquals(1_000_000_000L, s.next(), 1, "3 msg/s: the 4th message is intended at 1 s");
        s.reset(0, 0);
        assertEquals(Long.MAX_VALUE, s.next(), "rate 0 sends nothing");
    }

    @Test
    void scheduleHasNoCumulativeDriftAtOddRates() {
        RateSchedule s = new RateSchedule(30_000, 0);
        for (int k = 0; k < 30_000; k++) s.advance();
        assertEquals(1_000_000_000L, s.next(), 1, "30 000 messages at 30 000 msg/s end at 1 s");
    }

    @Test
    void awaitWaitsForTheIntendedTimeAndStops() {
        long t0 = System.nanoTime();
        RateSchedule s = new RateSchedule(1000, t0);
        for (int k = 0; k < 100; k++) {
            long t = s.await(() -> false);
            assertTrue(System.nanoTime() >= t, "never sends before its intended time");
            s.advance();
        }
        assertTrue(System.nanoTime() - t0 >= 99_000_000L, "100 messages at 1000 msg/s take at least 99 ms");
        RateSchedule late = new RateSchedule(1, System.nanoTime() + 60_000_000_000L);
        assertEquals(-1, late.await(() -> true), "stop is honoured while waiting");
    }

    @Test
    void behindCountsTheDebtAResetDrops() {
        RateSchedule s = new RateSchedule(1000, 0); // one message per ms
        assertEquals(0, s.behind(-1), "nothing is due before the segment starts");
        assertEquals(1, s.behind(0), "the first message is due at the start");
        for (int k = 0; k < 400; k++) s.advance();
        assertEquals(601, s.behind(1_000_000_000L), "1001 due by 1 s, 400 sent");
        for (int k = 0; k < 700; k++) s.advance();
        assertEquals(0, s.behind(1_000_000_000L), "ahead of schedule owes nothing");
        s.reset(1000, 2_000_000_000L);
        assertEquals(0, s.count());
        assertEquals(2_000_000_000L, s.next(), "a reset starts a fresh segment: old debt is not repaid");
        s.reset(0, 0);
        assertEquals(0, s.behind(5_000_000_000L), "rate 0 owes nothing");
    }

    @Test
    void achievedCountsAcksByIntendedTimeInsideTheWindow() {
        Metrics m = new Metrics();
        long now = System.nanoTime();
        m.onSendComplete(now - 5_000_000L, now, null); // before any window is set
        m.windowFrom = now;
        m.onSendComplete(now - 1, now, null);            // intended just before the window: warm-up debt
        m.onSendComplete(now, now, null);                // first intended time of the window
        m.onSendComplete(now + 10, now + 10, new RuntimeException("x")); // failed sends never count
        m.windowUntil = now + 1000;
        m.onSendComplete(now + 999, now + 999, null);    // acked after the window closed, intended inside: counts
        m.onSendComplete(now + 1000, now + 1000, null);  // intended at the end: outside
        assertEquals(2, m.ackedInWindow.sum());
        assertEquals(5, m.acked.sum());
        assertEquals(1, m.errors.sum());
    }

    // ---------------- histograms ----------------
    @Test
    void encodedHistogramsMergeExactly() {
        Random r = new Random(1);
        Histogram a = Histos.create(), b = Histos.create(), all = Histos.create();
        for (int i = 0; i < 100_000; i++) {
            long v = (long) (Math.exp(r.nextGaussian() * 2 + 7));
            (i % 3 == 0 ? a : b).recordValue(v);
            all.recordValue(v);
        }
        a.recordValue(3_600_000_000L); // one hour in µs: auto-resizing, never "outside covered range"
        all.recordValue(3_600_000_000L);
        Histogram m = Histos.decode(Histos.encode(a));
        m.add(Histos.decode(Histos.encode(b)));
        assertEquals(all.getTotalCount(), m.getTotalCount());
        for (double p : new double[]{0, 50, 90, 99, 99.9, 99.99, 100}) assertEquals(all.getValueAtPercentile(p), m.getValueAtPercentile(p), "p" + p);
        assertEquals(all.getMean(), m.getMean(), 1e-9);
        assertEquals(all, m);
    }

    @Test
    void quantileMapsHaveOmbKeys() {
        Histogram h = Histos.create();
        for (int i = 1; i <= 10_000; i++) h.recordValue(i);
        Map<Double, Double> q = Histos.quantiles(h, 1000.0);
        assertTrue(q.size() > 100);
        assertTrue(q.containsKey(50.0) && q.containsKey(99.0) && q.containsKey(100.0), q.keySet().toString());
        assertEquals("99.0", Double.valueOf(99.0).toString());
        assertEquals(10.0, q.get(100.0), 0.01, "max 10 000 µs = 10 ms");
        assertTrue(Histos.quantiles(Histos.create(), 1.0).isEmpty());
    }

    // ---------------- audit ----------------
    @Test
    void seqTrackerCountsUniqueDuplicatesAndGaps() {
        SeqTracker t = new SeqTracker();
        Random r = new Random(7);
        int n = 200_000;
        long[] order = new long[n];
        for (int i = 0; i < n; i++) order[i] = i;
        // bounded reordering: shuffle within windows of 5 000
        for (int w = 0; w < n; w += 5000)
            for (int i = Math.min(n, w + 5000) - 1; i > w; i--) {
                int j = w + r.nextInt(i - w + 1);
                long x = order[i]; order[i] = order[j]; order[j] = x;
            }
        int dups = 0;
        for (int i = 0; i < n; i++) {
            if (order[i] == 123_456) continue; // lost
            assertTrue(t.record(order[i]));
            if (i % 1000 == 0) { assertFalse(t.record(order[i])); dups++; }
        }
        assertEquals(n - 1, t.unique());
        assertEquals(dups, t.duplicated());
        assertEquals(123_456, t.lowestMissing());
        assertTrue(t.wordsAllocated() <= 8192, "memory bounded by the reordering span: " + t.wordsAllocated() + " words");
        assertFalse(t.record(5), "below the base: duplicate");
        assertEquals(dups + 1, t.duplicated());
    }

    @Test
    void seqTrackerStaysSmallWhenInOrder() {
        SeqTracker t = new SeqTracker();
        for (long s = 0; s < 10_000_000L; s++) t.record(s);
        assertEquals(10_000_000L, t.unique());
        assertEquals(16, t.wordsAllocated(), "no growth for in-order delivery");
    }

    @Test
    void auditPerSubscriptionCountsOutOfOrderPerPartitionOnly() {
        Audit a = new Audit("s", 2, 4);
        // producer 0 on partitions 0 and 1 interleaved: cross-partition order is not an error
        a.record(0, 1, 1);
        a.record(0, 0, 0);
        a.record(0, 2, 0);
        assertEquals(0, a.outOfOrder());
        a.record(1, 5, 2);
        a.record(1, 3, 2); // same partition, lower sequence
        assertEquals(1, a.outOfOrder());
        assertFalse(a.record(0, 2, 0), "duplicate");
        assertEquals(1, a.duplicated());
        assertEquals(5, a.unique());
        assertEquals(6, a.received());
        assertFalse(a.record(9, 0, 0), "unknown producer id = foreign");
        assertEquals(1, a.foreign());
    }

    @Test
    void headerRoundTrip() {
        byte[] b = new byte[100];
        MessageHeader.write(b, 7, 1L << 40, 1_700_000_000_000_000L, 1_700_000_000_000_123L);
        assertTrue(MessageHeader.valid(b));
        assertEquals(7, MessageHeader.producerId(b));
        assertEquals(1L << 40, MessageHeader.sequence(b));
        assertEquals(1_700_000_000_000_000L, MessageHeader.sendMicros(b));
        assertEquals(1_700_000_000_000_123L, MessageHeader.intendedMicros(b));
        assertFalse(MessageHeader.valid(new byte[100]));
        assertFalse(MessageHeader.valid(new byte[10]));
    }

    @Test
    void metricsRecordCorrectedLatencyFromIntendedTime() {
        Metrics m = new Metrics();
        long now = System.nanoTime();
        m.onSendComplete(now - 50_000_000L, now - 1_000_000L, null); // intended 50 ms ago, sent 1 ms ago
        m.onSendComplete(now, now, new RuntimeException("x"));
        Histogram[] h = m.interval(null);
        assertEquals(1, h[Metrics.PUBLISH].getTotalCount());
        assertTrue(h[Metrics.PUBLISH].getMaxValue() < 20_000, "raw latency from the actual send");
        assertTrue(h[Metrics.PUBLISH_CORRECTED].getMaxValue() >= 50_000, "corrected latency from the intended time");
        assertTrue(h[Metrics.PUBLISH_DELAY].getMaxValue() >= 49_000);
        assertEquals(1, m.errors.sum());
        assertEquals(1, m.acked.sum());
    }

    // ---------------- CLI ----------------
    @Test
    void commandLineErrors() {
        assertThrows(ConfigException.class, () -> Main.parse(new String[]{"--workload", "w"}));
        assertThrows(ConfigException.class, () -> Main.parse(new String[]{"--workload", "w", "--driver", "d"}));
        assertThrows(ConfigException.class, () -> Main.parse(new String[]{"--workload", "w", "--driver", "d", "--output", "o", "--process-index", "1"}));
        assertThrows(ConfigException.class, () -> Main.parse(new String[]{"--workload", "w", "--driver", "d", "--output", "o",
                "--process-index", "2", "--process-count", "2", "--start-at", "1"}));
        assertThrows(ConfigException.class, () -> Main.parse(new String[]{"--workload", "w", "--driver", "d", "--output", "o",
                "--process-index", "0", "--process-count", "2"}));
        assertThrows(ConfigException.class, () -> Main.parse(new String[]{"--workload", "w", "--driver", "d", "--output", "o", "--bogus", "1"}));
        Main.Args a = Main.parse(new String[]{"--validate-only", "--workload", "w", "--driver", "d"});
        assertTrue(a.validateOnly);
    }

    @Test
    void multiProcessRejectsModesThatNeedGlobalCounters() {
        Workload w = Workload.load("src/test/resources/good/workload.yaml");
        DriverConfig d = DriverConfig.load("src/test/resources/good/kafka.yaml");
        Main.Args a = Main.parse(new String[]{"--workload", "w", "--driver", "d", "--output", "o",
                "--process-index", "0", "--process-count", "2", "--start-at", "1"});
        ConfigException e = assertThrows(ConfigException.class, () -> Main.validate(a, w, d));
        assertTrue(e.getMessage().contains("producersPerTopic"), e.getMessage());
        w.producerRate = 0;
        w.producersPerTopic = 2;
        e = assertThrows(ConfigException.class, () -> Main.validate(a, w, d));
        assertTrue(e.getMessage().contains("producerRate"), e.getMessage());
    }
}
