package org.streambench.runner;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

class MergeTest {
    /** A part as a process writes it (the fields the merge reads). */
    static ObjectNode part(int index, long seed, long acked, long unique) {
        List<OmbResult.Period> ps = ResultSchemaTest.periods(2, seed);
        Histogram pub = Histos.create(), del = Histos.create(), e2e = Histos.create();
        for (OmbResult.Period p : ps) { pub.add(p.publish); del.add(p.publishDelay); e2e.add(p.e2e); }
        ObjectNode r = OmbResult.build("wl", "Kafka", 1024, 1, 10, 2, 2, 1, ps, pub, del, e2e);
        ObjectNode x = r.putObject("x-streambench");
        ObjectNode proc = x.putObject("process");
        proc.put("index", index); proc.put("count", 2); proc.put("startAt", 12345L);
        x.put("startTime", "2026-01-01T00:00:0" + index + "Z");
        x.put("endTime", "2026-01-01T00:01:0" + index + "Z");
        x.put("measurementStartTime", "2026-01-01T00:00:1" + index + "Z");
        x.put("measurementEndTime", "2026-01-01T00:00:3" + index + "Z");
        x.put("measurementSeconds", 20.0);
        x.putObject("producerRate").put("target", 4000.0).put("ackedInWindow", 38_000 + index).put("droppedScheduledSends", index);
        x.put("endToEndNegativeSamples", 1);
        ObjectNode h = x.putObject("histograms");
        h.put("publish", Histos.encode(pub));
        h.put("publishCorrected", Histos.encode(pub));
        h.put("publishDelay", Histos.encode(del));
        h.put("endToEnd", Histos.encode(e2e));
        h.put("endToEndCorrected", Histos.encode(e2e));
        ObjectNode pp = h.putObject("perPeriod");
        for (String k : new String[]{"publish", "publishCorrected", "publishDelay", "endToEnd"}) {
            ArrayNode a = pp.putArray(k);
            for (OmbResult.Period p : ps) a.add(Histos.encode(k.equals("publishDelay") ? p.publishDelay : k.equals("endToEnd") ? p.e2e : p.publish));
        }
        ObjectNode pc = x.putObject("periodCounts");
        pc.put("subscriptions", 1);
        ArrayNode s = pc.putArray("seconds"), a = pc.putArray("acked"), e = pc.putArray("errors"), rc = pc.putArray("received"),
                st = pc.putArray("sentTotal"), rt = pc.putArray("receivedTotal");
        for (OmbResult.Period p : ps) { s.add(p.seconds); a.add(p.acked); e.add(p.errors); rc.add(p.received); st.add(p.sentTotal); rt.add(p.receivedTotal); }
        ObjectNode ts = x.putObject("timeSeries");
        ts.putArray("t").add(1).add(2);
        ts.putArray("phase").add("measure").add("measure");
        for (String k : new String[]{"publishRate", "publishErrorRate", "consumeRate", "targetRate", "publishLatencyP99Ms",
                "publishLatencyCorrectedP99Ms", "endToEndP99Ms"}) ts.putArray(k).add(1000.0 + index).add(2000.0);
        ts.putArray("sentTotal").add(1000).add(3000);
        ts.putArray("receivedTotal").add(900).add(2900);
        ts.putArray("backlog").add(100).add(100);
        ObjectNode au = x.putObject("audit");
        au.put("sent", acked); au.put("acked", acked); au.put("sendErrors", 0); au.put("foreign", 0);
        au.put("drained", true); au.put("drainWaitSeconds", 0.5);
        ObjectNode sub = au.putObject("receivedPerSubscription").putObject("sub-0");
        sub.put("role", "tailing"); sub.put("received", unique + 1); sub.put("unique", unique);
        sub.put("duplicated", 1); sub.put("outOfOrder", 0);
        x.putArray("warnings");
        return r;
    }

    @Test
    void mergeAddsHistogramsAndCountsExactly() {
        ObjectNode a = part(0, 1, 40_000, 30_000), b = part(1, 2, 40_000, 50_000);
        ObjectNode m = Merge.merge(List.of("a.json", "b.json"), List.of(a, b));
        Histogram all = Histos.decode(a.at("/x-streambench/histograms/publish").asText());
        all.add(Histos.decode(b.at("/x-streambench/histograms/publish").asText()));
        assertEquals(all.getValueAtPercentile(99) / 1000.0, m.get("aggregatedPublishLatency99pct").asDouble(), 1e-9);
        assertEquals(all.getMaxValue() / 1000.0, m.get("aggregatedPublishLatencyMax").asDouble(), 1e-9);
        assertEquals(all.getTotalCount(), m.at("/x-streambench/publishLatencyMs/count").asLong());
        assertEquals(4000.0, m.get("publishRate").get(0).asDouble(), 1e-9, "rates summed per window");
        assertEquals(2 * (20_003 - 19_990), m.get("backlog").get(0).asLong(), "backlog recomputed from summed totals");
        JsonNode au = m.at("/x-streambench/audit");
        assertEquals(80_000, au.get("acked").asLong());
        assertEquals(80_000, au.at("/receivedPerSubscription/sub-0/unique").asLong());
        assertEquals(0, au.get("lost").asLong(), "lost recomputed from summed acked and unique");
        assertEquals(2, au.get("duplicated").asLong());
        assertEquals(2, m.at("/x-streambench/process/merged").size());
        assertEquals("2026-01-01T00:00:00Z", m.at("/x-streambench/startTime").asText());
        assertEquals("2026-01-01T00:01:01Z", m.at("/x-streambench/endTime").asText());
        assertEquals(62 + 1, m.size());
        assertEquals(200, m.at("/x-streambench/timeSeries/backlog/0").asLong());
        assertEquals(2001.0, m.at("/x-streambench/timeSeries/publishRate/0").asDouble(), 1e-9);
        assertEquals(76_001, m.at("/x-streambench/producerRate/ackedInWindow").asLong(), "in-window acks summed");
        assertEquals(76_001 / 20.0, m.at("/x-streambench/producerRate/achieved").asDouble(), 1e-9);
        assertEquals(all.getTotalCount() / 20.0, m.at("/x-streambench/producerRate/ackRate").asDouble(), 1e-9);
        assertEquals(1, m.at("/x-streambench/producerRate/droppedScheduledSends").asLong());
    }

    @Test
    void mergeDetectsLossAcrossProcesses() {
        ObjectNode m = Merge.merge(List.of("a", "b"), List.of(part(0, 1, 40_000, 30_000), part(1, 2, 40_000, 49_990)));
        assertEquals(10, m.at("/x-streambench/audit/lost").asLong());
    }

    @Test
    void mergeRejectsMismatchedParts() {
        ObjectNode a = part(0, 1, 10, 10), b = part(0, 2, 10, 10);
        ConfigException e = assertThrows(ConfigException.class, () -> Merge.merge(List.of("a.json", "b.json"), List.of(a, b)));
        assertTrue(e.getMessage().contains("b.json") && e.getMessage().contains("process.index"), e.getMessage());
        ObjectNode c = part(1, 2, 10, 10);
        c.put("workload", "other");
        e = assertThrows(ConfigException.class, () -> Merge.merge(List.of("a.json", "c.json"), List.of(a, c)));
        assertTrue(e.getMessage().contains("c.json: field 'workload'"), e.getMessage());
        e = assertThrows(ConfigException.class, () -> Merge.merge(List.of("a.json"), List.of(a)));
        assertTrue(e.getMessage().contains("process.count"), e.getMessage());
    }
}
