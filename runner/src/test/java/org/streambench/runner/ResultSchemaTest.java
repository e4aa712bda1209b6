package org.streambench.runner;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/** The OMB part of the result: every key of OMB's current TestResult, with OMB's JSON types. */
class ResultSchemaTest {
    static final String[] PCT = {"Avg", "50pct", "75pct", "95pct", "99pct", "999pct", "9999pct", "Max"};

    static List<String> ombKeys() {
        List<String> k = new ArrayList<>(List.of("workload", "driver", "messageSize", "topics", "partitions", "producersPerTopic",
                "consumersPerTopic", "publishRate", "publishErrorRate", "consumeRate", "backlog"));
        for (String p : PCT) k.add("publishLatency" + p);
        for (String p : PCT) k.add("publishDelayLatency" + p);
        for (String p : PCT) k.add("aggregatedPublishLatency" + p);
        for (String p : PCT) k.add("aggregatedPublishDelayLatency" + p);
        k.add("aggregatedPublishLatencyQuantiles");
        k.add("aggregatedPublishDelayLatencyQuantiles");
        for (String p : PCT) k.add("endToEndLatency" + p);
        k.add("aggregatedEndToEndLatencyQuantiles");
        for (String p : PCT) k.add("aggregatedEndToEndLatency" + p);
        return k;
    }

    static List<OmbResult.Period> periods(int n, long seed) {
        java.util.Random r = new java.util.Random(seed);
        List<OmbResult.Period> l = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            OmbResult.Period p = new OmbResult.Period();
            p.seconds = 10.0;
            p.acked = 20_000; p.errors = 3; p.received = 19_990;
            p.sentTotal = 20_003L * (i + 1); p.receivedTotal = 19_990L * (i + 1);
            p.publish = Histos.create(); p.publishDelay = Histos.create(); p.e2e = Histos.create();
            for (int k = 0; k < 20_000; k++) {
                p.publish.recordValue(1000 + r.nextInt(5000));
                p.publishDelay.recordValue(r.nextInt(300));
                p.e2e.recordValue(2000 + r.nextInt(8000));
            }
            l.add(p);
        }
        return l;
    }

    @Test
    void everyOmbKeyWithOmbTypesAndOrder() {
        List<OmbResult.Period> ps = periods(3, 1);
        Histogram pub = Histos.create(), del = Histos.create(), e2e = Histos.create();
        for (OmbResult.Period p : ps) { pub.add(p.publish); del.add(p.publishDelay); e2e.add(p.e2e); }
        ObjectNode r = OmbResult.build("wl", "Kafka", 1024, 1, 10, 2, 2, 1, ps, pub, del, e2e);
        List<String> keys = new ArrayList<>();
        r.fieldNames().forEachRemaining(keys::add);
        assertEquals(62, ombKeys().size());
        assertEquals(ombKeys(), keys, "OMB's keys in TestResult declaration order");
        assertTrue(r.get("workload").isTextual() && r.get("driver").isTextual());
        for (String k : List.of("messageSize", "topics", "partitions", "producersPerTopic", "consumersPerTopic"))
            assertTrue(r.get(k).isIntegralNumber(), k);
        for (String k : keys) {
            JsonNode v = r.get(k);
            if (k.startsWith("aggregated") && k.endsWith("Quantiles")) {
                assertTrue(v.isObject() && v.size() > 50, k);
                for (Iterator<String> it = v.fieldNames(); it.hasNext(); ) {
                    String q = it.next();
                    Double.parseDouble(q); // keys are percentiles written as strings
                    if (k.contains("Delay")) assertTrue(v.get(q).isIntegralNumber(), k + " values are µs longs");
                    else assertTrue(v.get(q).isDouble(), k + " values are ms doubles");
                }
            } else if (k.startsWith("aggregated")) {
                boolean longType = k.startsWith("aggregatedPublishDelayLatency") && !k.endsWith("Avg");
                assertTrue(longType ? v.isIntegralNumber() : v.isDouble(), k + " type");
            } else if (v.isArray()) {
                assertEquals(3, v.size(), k);
                boolean longType = k.equals("backlog") || (k.startsWith("publishDelayLatency") && !k.endsWith("Avg"));
                for (JsonNode e : v) assertTrue(longType ? e.isIntegralNumber() : e.isDouble(), k + " element type");
            }
        }
        // units: publish latency in ms (values recorded 1-6 ms in µs), publish delay in µs
        assertTrue(r.get("aggregatedPublishLatency50pct").asDouble() > 1 && r.get("aggregatedPublishLatency50pct").asDouble() < 6);
        assertTrue(r.get("aggregatedPublishDelayLatency50pct").asLong() > 50 && r.get("aggregatedPublishDelayLatency50pct").asLong() < 300);
        assertEquals(2000.0, r.get("publishRate").get(0).asDouble(), 1e-9);
        assertEquals(0.3, r.get("publishErrorRate").get(0).asDouble(), 1e-9);
        assertEquals(20_003 - 19_990, r.get("backlog").get(0).asLong());
    }

    @Test
    void emptyRunHasEmptyArraysAndZeroAggregates() {
        ObjectNode r = OmbResult.build("wl", "d", 100, 1, 1, 1, 0, 0, List.of(), Histos.create(), Histos.create(), Histos.create());
        assertEquals(62, r.size());
        assertEquals(0, r.get("publishRate").size());
        assertEquals(0.0, r.get("aggregatedEndToEndLatencyAvg").asDouble());
    }
}
