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

    /** Drops the last period and the last second of a part: a part that ended before the other. */
    static void endEarly(ObjectNode part) {
        ObjectNode x = (ObjectNode) part.get("x-streambench");
        for (String g : new String[]{"periodCounts", "timeSeries", "histograms/perPeriod"}) {
            JsonNode o = x.at("/" + g);
            o.fields().forEachRemaining(e -> { if (e.getValue().isArray()) ((ArrayNode) e.getValue()).remove(e.getValue().size() - 1); });
        }
    }

    @Test
    void partsThatEndApartMergeOverTheUnionOfTheirSeconds() {
        ObjectNode a = part(0, 1, 40_000, 40_000), b = part(1, 2, 40_000, 40_000);
        endEarly(a);   // a has 1 second and 1 period; b has 2 of each
        ObjectNode m = Merge.merge(List.of("a.json", "b.json"), List.of(a, b));
        JsonNode ts = m.at("/x-streambench/timeSeries");
        assertEquals(2, ts.get("t").size(), "every second some part measured");
        for (String k : new String[]{"publishRate", "consumeRate", "targetRate", "sentTotal", "receivedTotal", "backlog", "endToEndP99Ms"})
            assertEquals(2, ts.get(k).size(), k);
        assertEquals(2000.0, ts.at("/publishRate/1").asDouble(), 1e-9, "the ended part adds no rate");
        assertEquals(1000 + 3000, ts.at("/sentTotal/1").asLong(), "the ended part's total holds its last value");
        assertEquals(900 + 2900, ts.at("/receivedTotal/1").asLong());
        assertEquals(200, ts.at("/backlog/1").asLong());
        assertEquals(2, m.at("/x-streambench/periodCounts/acked").size(), "every period some part measured");
        assertEquals(b.at("/x-streambench/periodCounts/acked/1").asLong(), m.at("/x-streambench/periodCounts/acked/1").asLong());
        assertEquals(a.at("/x-streambench/periodCounts/sentTotal/0").asLong() + b.at("/x-streambench/periodCounts/sentTotal/1").asLong(),
                m.at("/x-streambench/periodCounts/sentTotal/1").asLong());
        assertEquals(2, m.at("/x-streambench/histograms/perPeriod/publish").size());
        assertEquals(2, m.get("publishRate").size());
    }

    @Test
    void windowsThatCloseApartMergeAsTheSumOfTheirRates() {
        // a loaded machine: part a's first window closed 0.6 s late (10.6 s), b's on time (10 s), each at its own rate
        ObjectNode a = part(0, 1, 40_000, 40_000), b = part(1, 2, 40_000, 40_000);
        ObjectNode pc = (ObjectNode) a.at("/x-streambench/periodCounts");
        ((ArrayNode) pc.get("seconds")).set(0, Fields.JSON.getNodeFactory().numberNode(10.6));
        ((ArrayNode) pc.get("acked")).set(0, Fields.JSON.getNodeFactory().numberNode(21_200L));
        ((ArrayNode) pc.get("received")).set(0, Fields.JSON.getNodeFactory().numberNode(10_600L));
        ObjectNode m = Merge.merge(List.of("a.json", "b.json"), List.of(a, b));
        assertEquals(21_200 / 10.6 + 20_000 / 10.0, m.get("publishRate").get(0).asDouble(), 1e-9,
                "each part's count over its own window, summed (not the summed count over the longer window)");
        assertEquals(10_600 / 10.6 + 19_990 / 10.0, m.get("consumeRate").get(0).asDouble(), 1e-9);
        assertEquals(3 / 10.0 + 3 / 10.6, m.get("publishErrorRate").get(0).asDouble(), 1e-9);
        assertEquals(4000.0, m.get("publishRate").get(1).asDouble(), 1e-9);
        // the counts stay counts: the merged period holds their sums and the longest window
        assertEquals(41_200, m.at("/x-streambench/periodCounts/acked/0").asLong());
        assertEquals(10.6, m.at("/x-streambench/periodCounts/seconds/0").asDouble(), 1e-9);
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

    // ---------------- fan-out: subscriptions left out because their consumers never connected ----------------

    /** A subscription's entry in a part's audit: this process's connected consumers of it and their unique count. */
    static ObjectNode sub(int consumers, long unique) {
        ObjectNode n = Fields.JSON.createObjectNode();
        n.put("role", "tailing"); n.put("consumers", consumers); n.put("received", unique); n.put("unique", unique);
        n.put("duplicated", 0); n.put("outOfOrder", 0); n.putNull("lost");
        return n;
    }

    /** A left-out subscription's entry: its consumers here (none connected) and what they received after a late connect. */
    static ObjectNode leftOut(int neverConnected, long lateUnique) {
        ObjectNode n = Fields.JSON.createObjectNode();
        n.put("role", "tailing"); n.put("neverConnected", neverConnected); n.put("received", lateUnique); n.put("unique", lateUnique);
        n.put("duplicated", 0); n.put("outOfOrder", 0);
        return n;
    }

    /** A part of a fan-out run whose audit holds the given subscriptions; left: name, entry, name, entry... */
    static ObjectNode fanPart(int index, long acked, ObjectNode perSub, Object... left) {
        ObjectNode r = part(index, index + 1, acked, 0);
        ObjectNode au = (ObjectNode) r.at("/x-streambench/audit");
        au.set("receivedPerSubscription", perSub);
        au.put("subscriptions", perSub.size());
        au.putNull("lost");
        ObjectNode lo = au.putObject("leftOutSubscriptions");
        for (int k = 0; k < left.length; k += 2) lo.set((String) left[k], (JsonNode) left[k + 1]);
        if (left.length > 0)
            ((ArrayNode) r.at("/x-streambench/warnings")).add(left.length / 2 + " consumers never connected within 600 s"
                    + " (x-streambench.fanOut.neverConnected); the " + left.length / 2 + " subscriptions none of whose consumers"
                    + " in this process connected are left out of the audit (x-streambench.audit.leftOutSubscriptions)");
        return r;
    }

    /** Subscriptions sub-0..sub-7 with one consumer each, sub-s's in part s mod 2 (as the runner splits them). */
    static ObjectNode[] eightSubscriptions(long[] unique, int... neverConnected) {
        ObjectNode p0 = Fields.JSON.createObjectNode(), p1 = Fields.JSON.createObjectNode();
        List<Object> l0 = new java.util.ArrayList<>(), l1 = new java.util.ArrayList<>();
        java.util.Set<Integer> never = new java.util.HashSet<>();
        for (int s : neverConnected) never.add(s);
        for (int s = 0; s < 8; s++) {
            String name = "sub-" + s;
            ObjectNode own = s % 2 == 0 ? p0 : p1, other = s % 2 == 0 ? p1 : p0;
            other.set(name, sub(0, 0)); // the process without a consumer of it still lists it, empty
            if (never.contains(s)) (s % 2 == 0 ? l0 : l1).addAll(List.of(name, leftOut(1, 0)));
            else own.set(name, sub(1, unique[s]));
        }
        // the one producer (1 msg/s, 16 s) is in part 0: all acks are part 0's
        return new ObjectNode[]{fanPart(0, 16, p0, l0.toArray()), fanPart(1, 0, p1, l1.toArray())};
    }

    @Test
    void subscriptionsLeftOutByTheirPartStayOutOfTheMergedAudit() {
        // the 2-host Kafka run: a never-connected consumer's subscription is left out of its own part, but the other
        // part lists it with 0 received; summed, it looked as if every acknowledged message was lost to it
        long[] all = {16, 16, 16, 16, 16, 16, 16, 16};
        ObjectNode[] p = eightSubscriptions(all, 2, 5, 7);
        ObjectNode m = Merge.merge(List.of("a.json", "b.json"), List.of(p[0], p[1]));
        JsonNode au = m.at("/x-streambench/audit");
        assertEquals(16, au.get("acked").asLong());
        assertEquals(0, au.get("lost").asLong(), "no message was lost: the 3 never-connected subscriptions are not audited");
        assertEquals(5, au.get("subscriptions").asInt());
        for (String s : new String[]{"sub-2", "sub-5", "sub-7"}) {
            assertFalse(au.path("receivedPerSubscription").has(s), s + " left out");
            assertEquals(1, au.at("/leftOutSubscriptions/" + s + "/neverConnected").asInt(), s);
        }
        for (String s : new String[]{"sub-0", "sub-1", "sub-3", "sub-4", "sub-6"}) {
            assertEquals(16, au.at("/receivedPerSubscription/" + s + "/unique").asLong(), s);
            assertEquals(1, au.at("/receivedPerSubscription/" + s + "/consumers").asInt(), s);
            assertEquals(0, au.at("/receivedPerSubscription/" + s + "/lost").asLong(), s);
        }
        String warnings = m.at("/x-streambench/warnings").toString();
        assertTrue(warnings.contains("3 subscriptions (3 consumers) are left out of the merged audit, as the parts [0, 1] left them out"), warnings);
        assertTrue(warnings.contains("part 1: 2 consumers never connected"), warnings);
    }

    @Test
    void connectedSubscriptionsStillCountWhatTheyMissed() {
        // sub-3 connected and missed 3 messages, sub-6 connected and received nothing: both real loss, next to the
        // left-out subscriptions; a left-out one whose consumer connected late is still not audited (said so)
        long[] u = {16, 16, 16, 13, 16, 16, 0, 16};
        ObjectNode[] p = eightSubscriptions(u, 2, 5);
        ((ObjectNode) p[0].at("/x-streambench/audit/leftOutSubscriptions/sub-2")).put("received", 7).put("unique", 7);
        ObjectNode m = Merge.merge(List.of("a.json", "b.json"), List.of(p[0], p[1]));
        JsonNode au = m.at("/x-streambench/audit");
        assertEquals(3, au.at("/receivedPerSubscription/sub-3/lost").asLong());
        assertEquals(16, au.at("/receivedPerSubscription/sub-6/lost").asLong());
        assertEquals(19, au.get("lost").asLong());
        assertEquals(6, au.get("subscriptions").asInt());
        assertEquals(7, au.at("/leftOutSubscriptions/sub-2/unique").asLong());
        String warnings = m.at("/x-streambench/warnings").toString();
        assertTrue(warnings.contains("2 subscriptions (2 consumers) are left out") && warnings.contains("connected later received 7 messages, not audited"),
                warnings);
    }

    @Test
    void aSubscriptionSplitOverPartsIsCountedOverThePartsThatHoldIt() {
        // a shared subscription of 4 consumers, 2 per part: none of part 0's connected, both of part 1's did; one
        // of part 0's connected after the deadline and took 4 of the 16 messages; a second subscription connected everywhere
        ObjectNode p0 = Fields.JSON.createObjectNode(), p1 = Fields.JSON.createObjectNode();
        p0.set("shared-a", sub(0, 0));
        p1.set("shared-a", sub(2, 12));
        p0.set("shared-b", sub(2, 7));
        p1.set("shared-b", sub(2, 9));
        ObjectNode m = Merge.merge(List.of("a.json", "b.json"),
                List.of(fanPart(0, 10, p0, "shared-a", leftOut(2, 4)), fanPart(1, 6, p1)));
        JsonNode au = m.at("/x-streambench/audit");
        assertEquals(2, au.get("subscriptions").asInt(), "still audited: part 1's consumers of it connected");
        assertEquals(16, au.at("/receivedPerSubscription/shared-a/unique").asLong(), "part 1's 12 and the late consumer's 4");
        assertEquals(2, au.at("/receivedPerSubscription/shared-a/consumers").asInt());
        assertEquals(2, au.at("/receivedPerSubscription/shared-a/neverConnected").asInt());
        assertEquals(16, au.at("/receivedPerSubscription/shared-b/unique").asLong());
        assertEquals(0, au.get("lost").asLong());
        assertEquals(0, au.path("leftOutSubscriptions").size());
        assertTrue(m.at("/x-streambench/warnings").toString().contains("1 subscriptions had consumers that never connected in some"
                + " processes and connected ones in others (first: shared-a)"), m.at("/x-streambench/warnings").toString());

        // the same with part 1's consumers missing 3 messages: real loss, reported
        p1.set("shared-a", sub(2, 9));
        m = Merge.merge(List.of("a.json", "b.json"), List.of(fanPart(0, 10, p0, "shared-a", leftOut(2, 4)), fanPart(1, 6, p1)));
        assertEquals(3, m.at("/x-streambench/audit/receivedPerSubscription/shared-a/lost").asLong());
        assertEquals(3, m.at("/x-streambench/audit/lost").asLong());
    }

    @Test
    void partsWrittenByTheRunnerMergeWithoutPhantomLoss() {
        // the audit blocks as Runner writes them: producer 0 (in part 0) acked sequences 0..9; sub-0's consumer is in
        // part 0 and connected, sub-1's is in part 1 and never connected
        Audit s0 = new Audit("sub-0", 1, 1), s1 = new Audit("sub-1", 1, 1), s0there = new Audit("sub-0", 1, 1),
                s1here = new Audit("sub-1", 1, 1);
        for (int q = 0; q < 10; q++) s0.record(0, q, 0);
        ObjectNode a0 = Runner.auditJson(10, 10, 0, List.of(s0, s1here), java.util.Set.of(), java.util.Map.of("sub-0", 1),
                java.util.Map.of(), false, true, 0.1);
        java.util.Map<Audit, Integer> left = new java.util.LinkedHashMap<>();
        left.put(s1, 1);
        ObjectNode a1 = Runner.auditJson(0, 0, 0, List.of(s0there), java.util.Set.of(), java.util.Map.of(), left, false, true, 0.1);
        assertEquals(0, a0.at("/receivedPerSubscription/sub-1/consumers").asInt(), "part 0 has no consumer of sub-1");
        assertTrue(a0.get("lost").isNull());
        assertEquals(1, a1.at("/leftOutSubscriptions/sub-1/neverConnected").asInt());
        assertFalse(a1.path("receivedPerSubscription").has("sub-1"));
        ObjectNode p0 = part(0, 1, 10, 10), p1 = part(1, 2, 0, 0);
        ((ObjectNode) p0.get("x-streambench")).set("audit", a0);
        ((ObjectNode) p1.get("x-streambench")).set("audit", a1);
        JsonNode au = Merge.merge(List.of("a.json", "b.json"), List.of(p0, p1)).at("/x-streambench/audit");
        assertEquals(0, au.get("lost").asLong());
        assertEquals(1, au.get("subscriptions").asInt());
        assertEquals(10, au.at("/receivedPerSubscription/sub-0/unique").asLong());
        assertTrue(au.at("/leftOutSubscriptions/sub-1").isObject());
    }

    @Test
    void badLeftOutFieldsAreNamed() {
        ObjectNode a = fanPart(0, 16, Fields.JSON.createObjectNode().set("sub-0", sub(1, 16))), b = fanPart(1, 0, Fields.JSON.createObjectNode());
        ((ObjectNode) b.at("/x-streambench/audit")).putArray("leftOutSubscriptions").add("sub-1");
        ConfigException e = assertThrows(ConfigException.class, () -> Merge.merge(List.of("a.json", "b.json"), List.of(a, b)));
        assertTrue(e.getMessage().contains("b.json") && e.getMessage().contains("x-streambench.audit.leftOutSubscriptions"), e.getMessage());
        ObjectNode c = fanPart(1, 0, Fields.JSON.createObjectNode().set("sub-0", sub(1, 0).put("consumers", "one")));
        e = assertThrows(ConfigException.class, () -> Merge.merge(List.of("a.json", "c.json"), List.of(a, c)));
        assertTrue(e.getMessage().contains("c.json") && e.getMessage().contains("receivedPerSubscription.sub-0.consumers"), e.getMessage());
    }
}
