package org.streambench.runner;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.function.DoublePredicate;

import static org.junit.jupiter.api.Assertions.*;

/** Max-rate discovery: the search over step verdicts and the judgement of one step. */
class DiscoveryTest {
    /** runs a search against a system that sustains rates up to capacity, with the given steps failing regardless */
    private static List<Double> run(RateSearch s, DoublePredicate sustains, int... noisySteps) {
        List<Double> tried = new ArrayList<>();
        int i = 0;
        while (!s.done()) {
            double r = s.current();
            tried.add(r);
            boolean noisy = false;
            for (int n : noisySteps) noisy |= n == i;
            s.record(!noisy && sustains.test(r));
            i++;
        }
        return tried;
    }

    @Test
    void doublesThenBisectsToWithinFivePercent() {
        RateSearch s = new RateSearch(2000, 24, 1);
        run(s, r -> r <= 45_000);
        assertTrue(s.settled() <= 45_000, "settled " + s.settled());
        assertTrue(s.settled() >= 45_000 / 1.05, "settled " + s.settled());
        assertTrue(s.rejected() / s.accepted() <= 1.05);
    }

    @Test
    void aColdFirstStepDoesNotPullTheResultDown() {
        // the old search turned down for good after one failed step at the initial rate and settled near 2 000
        RateSearch cold = new RateSearch(2000, 24, 1);
        List<Double> tried = run(cold, r -> r <= 45_000, 0);
        assertEquals(2000, tried.get(1), "the failed first step is retried at the same rate");
        RateSearch warm = new RateSearch(2000, 24, 1);
        run(warm, r -> r <= 45_000);
        assertEquals(warm.settled(), cold.settled(), 1e-9);
    }

    @Test
    void aFailureConfirmedByItsRetryTurnsTheSearchDown() {
        RateSearch s = new RateSearch(64_000, 24, 1);
        List<Double> tried = run(s, r -> r <= 20_000);
        assertEquals(List.of(64_000.0, 64_000.0, 32_000.0, 32_000.0, 16_000.0), tried.subList(0, 5));
        assertTrue(s.settled() <= 20_000 && s.settled() >= 20_000 / 1.05, "settled " + s.settled());
    }

    @Test
    void aSmallerGrowthFactorOverloadsLessBeforeItBisects() {
        // ceiling 45 000: doubling from 5 000 first fails at 80 000 (+78 %), growth 1.25 at 47 684 (+6 %)
        RateSearch dbl = new RateSearch(5000, 24, 1);
        double firstFailDbl = run(dbl, r -> r <= 45_000).stream().filter(r -> r > 45_000).findFirst().orElseThrow();
        assertEquals(80_000, firstFailDbl, 1e-9);
        RateSearch slow = new RateSearch(5000, 24, 1, 1.25);
        List<Double> tried = run(slow, r -> r <= 45_000);
        assertEquals(6250, tried.get(1), 1e-9, "5 000 x 1.25");
        double firstFail = tried.stream().filter(r -> r > 45_000).findFirst().orElseThrow();
        assertTrue(firstFail <= 45_000 * 1.25, "first failed step " + firstFail);
        assertTrue(slow.settled() <= 45_000 && slow.settled() >= 45_000 / 1.05, "settled " + slow.settled());
        assertEquals(run(new RateSearch(5000, 24, 1), r -> r <= 45_000), run(new RateSearch(5000, 24, 1, 2.0), r -> r <= 45_000),
                "the default is growth 2");
        assertThrows(IllegalArgumentException.class, () -> new RateSearch(5000, 24, 1, 1.0));
    }

    @Test
    void aCeilingBoundsEveryStepAndAPassAtItEndsTheSearch() {
        // a system that sustains 128 000 msg/s, searched under a ceiling of 48 828 msg/s
        RateSearch s = new RateSearch(8000, 8, 1, 2.0, 48_828);
        List<Double> tried = run(s, r -> r <= 128_000);
        assertEquals(List.of(8000.0, 16_000.0, 32_000.0, 48_828.0), tried, "no step above the ceiling");
        assertTrue(s.done() && s.ceilingReached());
        assertEquals(48_828, s.settled(), 1e-9);
        // below the ceiling the search is the same as without one
        RateSearch low = new RateSearch(8000, 24, 1, 2.0, 48_828);
        run(low, r -> r <= 20_000);
        RateSearch none = new RateSearch(8000, 24, 1);
        run(none, r -> r <= 20_000);
        assertFalse(low.ceilingReached());
        assertEquals(none.settled(), low.settled(), 1e-9);
        // a failed step at the ceiling turns the search down as any other
        RateSearch fail = new RateSearch(8000, 24, 1, 2.0, 48_828);
        run(fail, r -> r <= 40_000);
        assertFalse(fail.ceilingReached());
        assertTrue(fail.settled() <= 40_000 && fail.settled() >= 40_000 / 1.05, "settled " + fail.settled());
        assertEquals(1000, new RateSearch(5000, 8, 1, 2.0, 1000).current(), 1e-9, "an initial rate above it starts at it");
    }

    @Test
    void noRetriesMeansOneStepPerRate() {
        RateSearch s = new RateSearch(1000, 3, 0);
        assertFalse(s.record(true));
        assertEquals(2000, s.current());
        assertFalse(s.record(false));
        assertEquals(1500, s.current());
        assertTrue(s.record(true));
        assertEquals(1500, s.settled());
    }

    @Test
    void theStepBudgetEndsTheSearchAndNothingAcceptedSettlesBelowTheLowestFailure() {
        RateSearch s = new RateSearch(1000, 4, 1);
        run(s, r -> false);
        assertTrue(s.done());
        assertEquals(0, s.accepted());
        assertEquals(500, s.rejected(), 1e-9);
        assertEquals(250, s.settled(), 1e-9);
        assertThrows(IllegalStateException.class, () -> s.record(true));
    }

    @Test
    void aMeasuredPhaseThatDoesNotHoldIsRunAgainLowerWithinItsBudget() {
        // the steps (seconds each) pass 32 000 msg/s; a whole measured phase holds only 22 000
        RateSearch s = new RateSearch(4000, 6, 1);
        assertThrows(IllegalStateException.class, () -> s.measuredPhaseFailed(2), "only once the search is over");
        run(s, r -> r <= 32_000);
        assertEquals(32_000, s.settled(), 1e-9);
        List<Double> measured = new ArrayList<>(List.of(s.settled()));
        while (measured.get(measured.size() - 1) > 22_000 && s.measuredPhaseFailed(2)) measured.add(s.settled());
        assertEquals(List.of(32_000.0, 25_600.0, 20_480.0), measured);
        assertEquals(2, s.remeasures());
        assertEquals(25_600, s.rejected(), 1e-9, "a rejected measured phase is a rejected rate");
        assertFalse(s.measuredPhaseFailed(2), "the budget is spent");
        assertEquals(20_480, s.settled(), 1e-9, "and the settled rate stays");
        RateSearch none = new RateSearch(4000, 6, 1);
        run(none, r -> r <= 32_000);
        assertFalse(none.measuredPhaseFailed(0), "remeasures: 0 keeps the search's rate");
        assertEquals(32_000, none.settled(), 1e-9);
    }

    @Test
    void aMeasuredPhaseWhoseConsumersKeptUpWithLessIsRunAgainBelowWhatTheyKeptUpWith() {
        // the steps pass 64 000 msg/s; over the whole phase the consumers kept up with 30 000: the next phase runs at
        // 90 % of that, not at 80 % of 64 000 (51 200, which would fail again)
        RateSearch s = new RateSearch(4000, 6, 1);
        run(s, r -> r <= 64_000);
        assertEquals(64_000, s.settled(), 1e-9);
        assertTrue(s.measuredPhaseFailed(2, 30_000));
        assertEquals(27_000, s.settled(), 1e-9);
        // what kept up above 80 % changes nothing; NaN (not known) neither
        assertTrue(s.measuredPhaseFailed(3, 26_000));
        assertEquals(21_600, s.settled(), 1e-9);
        assertTrue(s.measuredPhaseFailed(4, Double.NaN));
        assertEquals(17_280, s.settled(), 1e-9);
        // a side that kept up with almost nothing does not drop the rate below a quarter of the failed one
        assertTrue(s.measuredPhaseFailed(5, 100));
        assertEquals(4_320, s.settled(), 1e-9);
        assertFalse(s.measuredPhaseFailed(4, 100), "the budget is spent");
    }

    @Test
    void whatKeptUpIsTheSlowestOfSendsAcksAndConsumers() {
        StepJudge.Verdict v = new StepJudge.Verdict();
        v.sendRate = 40_000;
        assertEquals(40_000, StepJudge.keptUpRate(v, 10, 1), 1e-9, "nothing grew: the send rate");
        v.inFlightGrowth = 50_000; // 5 000 msg/s more sent than acknowledged
        assertEquals(35_000, StepJudge.keptUpRate(v, 10, 1), 1e-9);
        v.backlogGrowth = 200_000; // over 2 subscriptions: each fell behind by 10 000 msg/s
        assertEquals(30_000, StepJudge.keptUpRate(v, 10, 2), 1e-9);
        v.inFlightGrowth = -1_000; // shrinking in-flight sends are no bound
        v.backlogGrowth = 0;
        assertEquals(40_000, StepJudge.keptUpRate(v, 10, 2), 1e-9);
        assertTrue(Double.isNaN(StepJudge.keptUpRate(v, 0, 1)), "an empty window tells nothing");
    }

    private static long[] flat(int n, long v) {
        long[] a = new long[n];
        java.util.Arrays.fill(a, v);
        return a;
    }

    private static long[] ramp(int n, long from, long perSecond) {
        long[] a = new long[n];
        for (int i = 0; i < n; i++) a[i] = from + i * perSecond;
        return a;
    }

    @Test
    void aSteadyStepPasses() {
        StepJudge.Verdict v = StepJudge.judge(10_000, 4, 40_000, flat(5, 300), flat(5, 800), 1, 5_000, 200_000);
        assertTrue(v.pass, v.reasons.toString());
    }

    @Test
    void theObservedFalsePassFailsNow() {
        // issue 11: a 64 000 msg/s step whose in-flight sends and backlog grew from 447 to ~12 500 in 2 s was accepted
        StepJudge.Verdict v = StepJudge.judge(64_000, 2, 128_000, new long[] {447, 6500, 12_481}, new long[] {447, 6700, 12_806},
                1, 50_000, 200_000);
        assertFalse(v.pass);
        assertTrue(v.reasons.stream().anyMatch(r -> r.startsWith("in-flight sends grew")), v.reasons.toString());
        assertTrue(v.reasons.stream().anyMatch(r -> r.startsWith("consumer backlog grew")), v.reasons.toString());
    }

    @Test
    void aBufferCappedClientFailsOnItsSchedule() {
        // Kafka: buffer.memory caps the in-flight count, so it cannot grow; send() blocks, the schedule slips
        StepJudge.Verdict v = StepJudge.judge(78_000, 4, (long) (0.85 * 78_000 * 4), flat(5, 32_000), flat(5, 500), 1,
                900_000, 200_000);
        assertFalse(v.pass);
        assertTrue(v.reasons.stream().anyMatch(r -> r.startsWith("sent ")), v.reasons.toString());
        assertTrue(v.reasons.stream().anyMatch(r -> r.startsWith("publish delay")), v.reasons.toString());
    }

    @Test
    void aBacklogLevelAboveOneWindowFailsEvenWithoutGrowth() {
        StepJudge.Verdict v = StepJudge.judge(2_000, 4, 8_000, flat(5, 10), flat(5, 50_000), 1, 1_000, 200_000);
        assertFalse(v.pass);
        assertTrue(v.reasons.stream().anyMatch(r -> r.startsWith("consumer backlog reached")), v.reasons.toString());
    }

    @Test
    void aShrinkingBacklogIsNotGrowth() {
        StepJudge.Verdict v = StepJudge.judge(10_000, 4, 40_000, ramp(5, 9_000, -2_000), ramp(5, 9_000, -2_000), 1, 5_000, 200_000);
        assertTrue(v.pass, v.reasons.toString());
    }

    @Test
    void trendIsTheLeastSquaresSlope() {
        assertEquals(0, StepJudge.trend(new long[] {5}), 1e-12);
        assertEquals(3, StepJudge.trend(ramp(6, 1, 3)), 1e-9);
        assertEquals(0, StepJudge.trend(new long[] {0, 100, 0, 100, 0, 100, 0}), 1e-9);
    }

    @Test
    void clientLogShapesFoldNumbersAndBracketedNames() {
        assertEquals("[…] […] Creating producer on cnx #",
                ClientLogCounter.shape("[persistent://public/ns-x/sb-1-partition-3] [null] Creating producer on cnx 42"));
    }
}
