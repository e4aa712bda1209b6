package org.streambench.runner;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.HdrHistogram.Histogram;

import java.util.List;
import java.util.Map;

/** Builds the 62 keys of OMB's TestResult (names, types, units, order) from per-period data. */
public final class OmbResult {
    /** One 10-s window of the measured phase. */
    public static final class Period {
        public double seconds;
        public long acked, errors, received, sentTotal, receivedTotal;
        public Histogram publish, publishDelay, e2e;
        /** Rates given whole (a merge of parts: the sum of each part's count over its own window), else each count over
         *  {@link #seconds}. */
        public double publishRate = Double.NaN, errorRate = Double.NaN, consumeRate = Double.NaN;
    }

    public static final String[] PCT_NAMES = {"50pct", "75pct", "95pct", "99pct", "999pct", "9999pct"};
    public static final double[] PCTS = {50, 75, 95, 99, 99.9, 99.99};

    private OmbResult() {}

    public static ObjectNode build(String workloadName, String driverName, long messageSize, int topics, int partitions,
                                   int producersPerTopic, int consumersPerTopic, int subscriptions,
                                   List<Period> periods, Histogram aggPublish, Histogram aggDelay, Histogram aggE2e) {
        ObjectNode r = Fields.JSON.createObjectNode();
        r.put("workload", workloadName);
        r.put("driver", driverName);
        r.put("messageSize", messageSize);
        r.put("topics", topics);
        r.put("partitions", partitions);
        r.put("producersPerTopic", producersPerTopic);
        r.put("consumersPerTopic", consumersPerTopic);
        ArrayNode pr = r.putArray("publishRate"), per = r.putArray("publishErrorRate"), cr = r.putArray("consumeRate"),
                bl = r.putArray("backlog");
        for (Period p : periods) {
            pr.add(Double.isNaN(p.publishRate) ? p.acked / p.seconds : p.publishRate);
            per.add(Double.isNaN(p.errorRate) ? p.errors / p.seconds : p.errorRate);
            cr.add(Double.isNaN(p.consumeRate) ? p.received / p.seconds : p.consumeRate);
            bl.add(Math.max(0, subscriptions * p.sentTotal - p.receivedTotal));
        }
        series(r, "publishLatency", periods, 0, 1000.0, false);
        series(r, "publishDelayLatency", periods, 1, 1.0, true);
        aggregated(r, "aggregatedPublishLatency", aggPublish, 1000.0, false);
        aggregated(r, "aggregatedPublishDelayLatency", aggDelay, 1.0, true);
        ObjectNode q = r.putObject("aggregatedPublishLatencyQuantiles");
        for (Map.Entry<Double, Double> e : Histos.quantiles(aggPublish, 1000.0).entrySet()) q.put(e.getKey().toString(), e.getValue());
        ObjectNode qd = r.putObject("aggregatedPublishDelayLatencyQuantiles");
        for (Map.Entry<Double, Long> e : Histos.quantilesLong(aggDelay).entrySet()) qd.put(e.getKey().toString(), e.getValue());
        series(r, "endToEndLatency", periods, 2, 1000.0, false);
        ObjectNode qe = r.putObject("aggregatedEndToEndLatencyQuantiles");
        for (Map.Entry<Double, Double> e : Histos.quantiles(aggE2e, 1000.0).entrySet()) qe.put(e.getKey().toString(), e.getValue());
        aggregated(r, "aggregatedEndToEndLatency", aggE2e, 1000.0, false);
        return r;
    }

    private static Histogram pick(Period p, int which) {
        return which == 0 ? p.publish : which == 1 ? p.publishDelay : p.e2e;
    }

    private static void series(ObjectNode r, String prefix, List<Period> periods, int which, double div, boolean asLong) {
        ArrayNode avg = r.putArray(prefix + "Avg");
        ArrayNode[] pc = new ArrayNode[PCTS.length];
        for (int i = 0; i < PCTS.length; i++) pc[i] = r.putArray(prefix + PCT_NAMES[i]);
        ArrayNode max = r.putArray(prefix + "Max");
        for (Period p : periods) {
            Histogram h = pick(p, which);
            avg.add(h.getTotalCount() == 0 ? 0.0 : h.getMean() / div);
            for (int i = 0; i < PCTS.length; i++) {
                long v = h.getValueAtPercentile(PCTS[i]);
                if (asLong) pc[i].add(v); else pc[i].add(v / div);
            }
            if (asLong) max.add(h.getMaxValue()); else max.add(h.getMaxValue() / div);
        }
    }

    private static void aggregated(ObjectNode r, String prefix, Histogram h, double div, boolean asLong) {
        r.put(prefix + "Avg", h.getTotalCount() == 0 ? 0.0 : h.getMean() / div);
        for (int i = 0; i < PCTS.length; i++) {
            long v = h.getValueAtPercentile(PCTS[i]);
            if (asLong) r.put(prefix + PCT_NAMES[i], v); else r.put(prefix + PCT_NAMES[i], v / div);
        }
        if (asLong) r.put(prefix + "Max", h.getMaxValue()); else r.put(prefix + "Max", h.getMaxValue() / div);
    }
}
