package org.streambench.runner;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.*;

/** StallWatch: a run stops once sends are in flight and nothing (acknowledgement or error) has come back for the limit. */
class StallWatchTest {
    static final long S = 1_000_000_000L;

    @Test
    void stalledOnlyWhenNothingCameBackForTheLimitWithSendsInFlight() {
        StallWatch w = new StallWatch(60_000);
        assertEquals(-1, w.stalledSeconds(100, 50, 0));
        assertEquals(-1, w.stalledSeconds(100, 50, 59 * S), "59 s without progress: not yet");
        assertEquals(60, w.stalledSeconds(100, 50, 60 * S));
        assertEquals(75, w.stalledSeconds(100, 50, 75 * S));
    }

    @Test
    void anyAcknowledgementOrErrorRestartsTheClock() {
        StallWatch w = new StallWatch(60_000);
        w.stalledSeconds(100, 50, 0);
        assertEquals(-1, w.stalledSeconds(101, 49, 50 * S), "one acknowledgement or error is progress");
        assertEquals(-1, w.stalledSeconds(101, 49, 109 * S));
        assertEquals(60, w.stalledSeconds(101, 49, 110 * S));
    }

    @Test
    void nothingInFlightIsNeverAStall() {
        // a consumer-only part, the seconds before the first send, a paused producer: nothing is owed
        StallWatch w = new StallWatch(60_000);
        assertEquals(-1, w.stalledSeconds(0, 0, 0));
        assertEquals(-1, w.stalledSeconds(0, 0, 600 * S));
        // the clock runs from the last check that owed nothing (checks come every 0.1 s in a run)
        assertEquals(-1, w.stalledSeconds(0, 3, 601 * S));
        assertEquals(-1, w.stalledSeconds(0, 3, 659 * S));
        assertEquals(60, w.stalledSeconds(0, 3, 660 * S));
    }

    @Test
    void aLimitOfZeroIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new StallWatch(0));
    }
}
