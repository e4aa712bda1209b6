package org.streambench.runner;

import com.fasterxml.jackson.databind.JsonNode;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.*;

class TimeSeriesTest {
    static Histogram[] hists() {
        Histogram[] h = new Histogram[Metrics.N];
        for (int i = 0; i < h.length; i++) h[i] = Histos.create();
        return h;
    }

    @Test
    void secondsALoopStalledThroughGetAnElementEach() {
        TimeSeries ts = new TimeSeries();
        Histogram[] h = hists();
        ts.add(1, "measure", 100, 0, 100, 0, 100, h, 100, 100);
        ts.add(2, "measure", 100, 0, 100, 0, 100, h, 200, 200);
        // the loop stalled from second 2 to second 6: its next pass is tick 6, with 4 seconds skipped (3, 4, 5, then 6)
        ts.add(6, 3, "measure", 100, 0, 80, 80, 100, h, 600, 520);
        JsonNode n = ts.toJson(0);
        assertEquals(6, n.get("t").size(), "one element per second");
        for (int i = 0; i < 6; i++) assertEquals(i + 1, n.at("/t/" + i).asLong());
        assertEquals(80.0, n.at("/consumeRate/3").asDouble(), 1e-9, "the gap's average rate in each of its seconds");
        assertEquals(300, n.at("/sentTotal/2").asLong(), "running totals interpolated over the gap");
        assertEquals(400, n.at("/sentTotal/3").asLong());
        assertEquals(600, n.at("/sentTotal/5").asLong(), "the last element carries the totals read");
        assertEquals(520, n.at("/receivedTotal/5").asLong());
        assertEquals(80, n.at("/backlog/4").asLong());
        ts.add(7, "measure", 100, 0, 100, 0, 100, h, 700, 620);
        assertEquals(7, ts.toJson(0).get("t").size());
    }
}
