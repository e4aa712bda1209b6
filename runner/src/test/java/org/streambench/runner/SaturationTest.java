package org.streambench.runner;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.*;

/** Max-rate discovery by saturation: the capacity estimate, its ceiling, its bound on sends in flight, its settings. */
class SaturationTest {
    @Test
    void theCapacityIsTheSlowerOfAcknowledgementsAndConsumers() {
        // 7 judged seconds: 210 000 acknowledged (30 000 msg/s), each subscription received 175 000 (25 000 msg/s)
        Saturation s = Saturation.estimate(7, 210_000, 175_000, Double.POSITIVE_INFINITY, 0.9);
        assertEquals(30_000, s.ackRate, 1e-9);
        assertEquals(25_000, s.consumeRate, 1e-9);
        assertEquals(25_000, s.capacity, 1e-9);
        assertEquals(22_500, s.settled, 1e-9);
        assertFalse(s.ceilingReached);
        // no consumers (or not known in this process): the acknowledgements alone
        Saturation p = Saturation.estimate(7, 210_000, Double.NaN, Double.POSITIVE_INFINITY, 0.8);
        assertEquals(30_000, p.capacity, 1e-9);
        assertEquals(24_000, p.settled, 1e-9);
        assertTrue(Double.isNaN(p.consumeRate));
    }

    @Test
    void aCapacityAtTheCeilingSettlesOnTheCeilingAsALowerBound() {
        Saturation s = Saturation.estimate(7, (long) (7 * 48_000), 7 * 47_900.0, 48_828, 0.9);
        assertTrue(s.ceilingReached);
        assertEquals(48_828, s.settled, 1e-9);
        // just below the ceiling's 97 %: an estimate like any other
        Saturation b = Saturation.estimate(7, (long) (7 * 46_000), Double.NaN, 48_828, 0.9);
        assertFalse(b.ceilingReached);
        assertEquals(Math.floor(0.9 * 46_000), b.settled, 1e-9);
    }

    @Test
    void nothingAcknowledgedStillSettlesOnAPositiveRate() {
        Saturation s = Saturation.estimate(7, 0, 0, Double.POSITIVE_INFINITY, 0.9);
        assertEquals(0, s.capacity, 1e-9);
        assertEquals(1, s.settled, 1e-9);
        assertThrows(IllegalArgumentException.class, () -> Saturation.estimate(0, 10, 10, 1e6, 0.9));
        assertThrows(IllegalArgumentException.class, () -> Saturation.estimate(5, 10, 10, 1e6, 1.5));
    }

    @Test
    void theDefaultBoundOnSendsInFlightIs64MiBAndAtMostHalfASecondOfTheCeiling() {
        assertEquals((64L << 20) / 1024, Saturation.defaultMaxInFlight(1024, Double.POSITIVE_INFINITY));
        assertEquals(24_414, Saturation.defaultMaxInFlight(1024, 48_828));
        assertEquals(1000, Saturation.defaultMaxInFlight(1024, 500), "never below 1 000");
        assertEquals(1000, Saturation.defaultMaxInFlight(10 << 20, Double.POSITIVE_INFINITY));
    }

    @Test
    void aSearchSettledByAnEstimateIsLoweredLikeAnyOtherWhenItsMeasuredPhaseFails() {
        RateSearch s = RateSearch.settledAt(20_000, Double.POSITIVE_INFINITY);
        assertTrue(s.done());
        assertEquals(20_000, s.settled(), 1e-9);
        assertFalse(s.ceilingReached());
        assertTrue(s.measuredPhaseFailed(2));
        assertEquals(16_000, s.settled(), 1e-9);
        RateSearch c = RateSearch.settledAt(48_828, 48_828);
        assertTrue(c.ceilingReached());
        assertEquals(48_828, c.settled(), 1e-9);
        // a measured phase at the ceiling that did not hold takes the bound back: the lower rate is a measurement
        assertTrue(c.measuredPhaseFailed(2));
        assertFalse(c.ceilingReached());
        assertEquals(0.8 * 48_828, c.settled(), 1e-6);
    }

    private static Workload load(Path dir, String discovery) throws Exception {
        Path f = dir.resolve("w.yaml");
        Files.writeString(f, "name: w\ntopics: 1\npartitionsPerTopic: 1\nmessageSize: 1024\nsubscriptionsPerTopic: 1\n"
                + "producersPerTopic: 1\nconsumerPerSubscription: 1\nproducerRate: 0\nconsumerBacklogSizeGB: 0\n"
                + "testDurationMinutes: 1\nwarmupDurationMinutes: 0\nkeyDistributor: NO_KEY\nuseRandomizedPayloads: true\n"
                + "randomBytesRatio: 0.5\nrandomizedPayloadPoolSize: 10\n"
                + "x-streambench: {testDurationSeconds: 10, warmupDurationSeconds: 3, rateDiscovery: " + discovery + "}\n");
        return Workload.load(f.toString());
    }

    @Test
    void theModeAndItsSettingsAreReadAndCheckedNamingTheField(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Workload ladder = load(dir, "{initialRate: 8000}");
        assertFalse(ladder.saturate());
        Workload sat = load(dir, "{mode: saturate, saturateSeconds: 8, confirmFraction: 0.85, maxInFlight: 5000}");
        assertTrue(sat.saturate());
        assertEquals(8, sat.discoverySaturateSeconds);
        assertEquals(0.85, sat.discoveryConfirmFraction, 1e-9);
        assertEquals(5000, sat.discoveryMaxInFlight);
        // the deadline counts the saturation phase, not a ladder's steps
        assertTrue(sat.defaultDeadlineSeconds() < ladder.defaultDeadlineSeconds());
        ConfigException bad = assertThrows(ConfigException.class, () -> load(dir, "{mode: bisect}"));
        assertTrue(bad.getMessage().contains("rateDiscovery.mode"), bad.getMessage());
        ConfigException frac = assertThrows(ConfigException.class, () -> load(dir, "{mode: saturate, confirmFraction: 1.5}"));
        assertTrue(frac.getMessage().contains("confirmFraction"), frac.getMessage());
        ConfigException shortPhase = assertThrows(ConfigException.class,
                () -> load(dir, "{mode: saturate, saturateSeconds: 3, settleSeconds: 2}"));
        assertTrue(shortPhase.getMessage().contains("settleSeconds"), shortPhase.getMessage());
    }
}
