package org.streambench.runner;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.HdrHistogram.Histogram;

import java.util.ArrayList;
import java.util.List;

/** Per-second series over the whole run (a few numbers per second: bounded by the run's duration, not its messages). */
final class TimeSeries {
    final List<Long> tick = new ArrayList<>(), backlog = new ArrayList<>(), sentTotal = new ArrayList<>(), receivedTotal = new ArrayList<>();
    final List<String> phase = new ArrayList<>();
    final List<Double> pub = new ArrayList<>(), err = new ArrayList<>(), cons = new ArrayList<>(), target = new ArrayList<>(),
            p99 = new ArrayList<>(), p99c = new ArrayList<>(), e2e99 = new ArrayList<>();

    void add(long t, String ph, double pubRate, double errRate, double consRate, long bl, double targetRate, Histogram[] h,
             long sent, long recv) {
        add(t, 0, ph, pubRate, errRate, consRate, bl, targetRate, h, sent, recv);
    }

    /**
     * The element of second {@code t}, after one for each of the {@code skipped} seconds before it that the tick loop
     * missed (it stalled): those carry the same rates (the averages over the whole gap), latencies and backlog, and
     * running totals interpolated between the last element's and these.
     */
    void add(long t, long skipped, String ph, double pubRate, double errRate, double consRate, long bl, double targetRate,
             Histogram[] h, long sent, long recv) {
        long sent0 = sentTotal.isEmpty() ? 0 : sentTotal.get(sentTotal.size() - 1);
        long recv0 = receivedTotal.isEmpty() ? 0 : receivedTotal.get(receivedTotal.size() - 1);
        for (long k = 0; k <= skipped; k++) {
            double f = (double) (k + 1) / (skipped + 1);
            one(t - skipped + k, ph, pubRate, errRate, consRate, bl, targetRate, h,
                    k == skipped ? sent : sent0 + Math.round(f * (sent - sent0)),
                    k == skipped ? recv : recv0 + Math.round(f * (recv - recv0)));
        }
    }

    private void one(long t, String ph, double pubRate, double errRate, double consRate, long bl, double targetRate,
                     Histogram[] h, long sent, long recv) {
        tick.add(t);
        phase.add(ph);
        pub.add(pubRate);
        err.add(errRate);
        cons.add(consRate);
        backlog.add(bl);
        target.add(targetRate);
        p99.add(h[Metrics.PUBLISH].getValueAtPercentile(99) / 1000.0);
        p99c.add(h[Metrics.PUBLISH_CORRECTED].getValueAtPercentile(99) / 1000.0);
        e2e99.add(h[Metrics.E2E].getValueAtPercentile(99) / 1000.0);
        sentTotal.add(sent);
        receivedTotal.add(recv);
    }

    /** renames phase {@code from} to {@code to} in the seconds from tick {@code since} on */
    void relabel(long since, String from, String to) {
        for (int i = 0; i < tick.size(); i++)
            if (tick.get(i) >= since && phase.get(i).equals(from)) phase.set(i, to);
    }

    /** mean pub, err, cons rate and max p99s over the last n seconds */
    double[] lastWindow(int n) {
        double[] r = new double[6];
        int k = Math.min(n, pub.size());
        for (int i = pub.size() - k; i < pub.size(); i++) {
            r[0] += pub.get(i) / k;
            r[1] += err.get(i) / k;
            r[2] += cons.get(i) / k;
            r[3] = Math.max(r[3], p99.get(i));
            r[4] = Math.max(r[4], p99c.get(i));
            r[5] = Math.max(r[5], e2e99.get(i));
        }
        return r;
    }

    double meanConsume(long n) {
        int k = (int) Math.min(n, cons.size());
        double s = 0;
        for (int i = cons.size() - k; i < cons.size(); i++) s += cons.get(i);
        return k == 0 ? 0 : s / k;
    }

    ObjectNode toJson(long measureStartTick) {
        ObjectNode n = Fields.JSON.createObjectNode();
        n.put("intervalSeconds", 1);
        ArrayNode t = n.putArray("t");
        for (long x : tick) t.add(measureStartTick >= 0 ? x - measureStartTick : x);
        ArrayNode ph = n.putArray("phase");
        phase.forEach(ph::add);
        put(n, "publishRate", pub);
        put(n, "publishErrorRate", err);
        put(n, "consumeRate", cons);
        ArrayNode b = n.putArray("backlog");
        backlog.forEach(b::add);
        put(n, "targetRate", target);
        put(n, "publishLatencyP99Ms", p99);
        put(n, "publishLatencyCorrectedP99Ms", p99c);
        put(n, "endToEndP99Ms", e2e99);
        ArrayNode st = n.putArray("sentTotal");
        sentTotal.forEach(st::add);
        ArrayNode rt = n.putArray("receivedTotal");
        receivedTotal.forEach(rt::add);
        return n;
    }

    private static void put(ObjectNode n, String k, List<Double> l) {
        ArrayNode a = n.putArray(k);
        for (double d : l) a.add(d);
    }
}
