package org.streambench.runner;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.HdrHistogram.Histogram;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/** omb-merge: exact merge of the parts written by N runner processes of one run (histograms added, counts summed). */
public final class Merge {
    private Merge() {}

    public static void main(String[] args) {
        int rc;
        try {
            String out = null;
            List<String> parts = new ArrayList<>();
            for (int i = 0; i < args.length; i++) {
                if (args[i].equals("--output")) {
                    if (i + 1 >= args.length) throw new ConfigException("command line: --output needs a value");
                    out = args[++i];
                } else if (args[i].startsWith("--")) {
                    throw new ConfigException("command line: unknown option " + args[i] + "\nusage: omb-merge --output OUT.json PART.json...");
                } else parts.add(args[i]);
            }
            if (out == null) throw new ConfigException("command line: --output is required\nusage: omb-merge --output OUT.json PART.json...");
            if (parts.isEmpty()) throw new ConfigException("command line: no part files given");
            List<JsonNode> docs = new ArrayList<>();
            for (String p : parts) docs.add(read(p));
            ObjectNode merged = merge(parts, docs);
            Path op = Path.of(out).toAbsolutePath();
            if (op.getParent() != null) Files.createDirectories(op.getParent());
            Main.writeAtomically(op, merged);
            System.err.println("omb-merge: merged " + parts.size() + " parts into " + op);
            rc = 0;
        } catch (ConfigException e) {
            System.err.println("omb-merge: error: " + e.getMessage());
            rc = 2;
        } catch (Exception e) {
            System.err.println("omb-merge: error: " + e);
            rc = 1;
        }
        System.exit(rc);
    }

    static JsonNode read(String p) {
        JsonNode n;
        try {
            n = Fields.JSON.readTree(Files.readString(Path.of(p)));
        } catch (IOException e) {
            throw new ConfigException(p + ": cannot read as JSON: " + String.valueOf(e.getMessage()).split("\n")[0]);
        }
        if (n == null || !n.isObject()) throw new ConfigException(p + ": not a JSON object");
        if (!n.path("x-streambench").isObject())
            throw new ConfigException(p, "x-streambench", "missing: not a result of this runner (only its results carry the histograms needed for an exact merge)");
        for (String k : new String[]{"histograms", "periodCounts", "timeSeries", "audit", "process"})
            if (!n.path("x-streambench").path(k).isObject()) throw new ConfigException(p, "x-streambench." + k, "missing or not an object");
        return n;
    }

    static ObjectNode merge(List<String> names, List<JsonNode> docs) {
        JsonNode first = docs.get(0);
        int count = first.at("/x-streambench/process/count").asInt();
        if (count != docs.size())
            throw new ConfigException(names.get(0), "x-streambench.process.count", "is " + count + " but " + docs.size() + " parts were given");
        Set<Integer> seen = new HashSet<>();
        for (int i = 0; i < docs.size(); i++) {
            JsonNode d = docs.get(i);
            JsonNode x = d.get("x-streambench");
            int idx = x.at("/process/index").asInt(-1);
            if (!seen.add(idx)) throw new ConfigException(names.get(i), "x-streambench.process.index", "duplicate index " + idx);
            for (String k : new String[]{"workload", "driver", "messageSize", "topics", "partitions"})
                if (!d.path(k).equals(first.path(k))) throw new ConfigException(names.get(i), k, "differs from " + names.get(0));
            if (!x.at("/process/startAt").equals(first.at("/x-streambench/process/startAt")))
                throw new ConfigException(names.get(i), "x-streambench.process.startAt", "differs from " + names.get(0) + " (not parts of one run)");
        }
        int subs = first.at("/x-streambench/periodCounts/subscriptions").asInt();
        // over the union of the parts' periods (and seconds below): the parts start together at startAt but end a few
        // seconds apart (each drains on its own), and a part that has ended adds nothing to a later period or second
        // while its running totals hold their last value. A period's rates are the sum of the parts' rates, each part's
        // count over its own window: the parts' windows share their planned bounds but each closes on its own 1-s tick,
        // and on a loaded machine one part's window can run several tenths of a second longer than the other's (its
        // count is then over a longer time; the sum of counts over the longest window would understate the rate)
        int nPeriods = 0;
        for (JsonNode d : docs) nPeriods = Math.max(nPeriods, d.at("/x-streambench/periodCounts/acked").size());
        List<OmbResult.Period> periods = new ArrayList<>();
        String[] perNames = {"publish", "publishCorrected", "publishDelay", "endToEnd"};
        List<Histogram[]> perHists = new ArrayList<>();
        for (int i = 0; i < nPeriods; i++) {
            OmbResult.Period p = new OmbResult.Period();
            p.publishRate = 0; p.errorRate = 0; p.consumeRate = 0;
            Histogram[] hs = new Histogram[perNames.length];
            for (int k = 0; k < hs.length; k++) hs[k] = Histos.create();
            for (JsonNode d : docs) {
                JsonNode pc = d.at("/x-streambench/periodCounts");
                p.sentTotal += held(pc.get("sentTotal"), i);
                p.receivedTotal += held(pc.get("receivedTotal"), i);
                if (i >= pc.get("acked").size()) continue;
                double sec = pc.get("seconds").get(i).asDouble();
                long acked = pc.get("acked").get(i).asLong(), errors = pc.get("errors").get(i).asLong(),
                        received = pc.get("received").get(i).asLong();
                p.seconds = Math.max(p.seconds, sec);
                p.acked += acked;
                p.errors += errors;
                p.received += received;
                if (sec > 0) { p.publishRate += acked / sec; p.errorRate += errors / sec; p.consumeRate += received / sec; }
                for (int k = 0; k < hs.length; k++)
                    hs[k].add(Histos.decode(d.at("/x-streambench/histograms/perPeriod/" + perNames[k]).get(i).asText()));
            }
            p.publish = hs[0]; p.publishDelay = hs[2]; p.e2e = hs[3];
            periods.add(p);
            perHists.add(hs);
        }
        String[] aggNames = {"publish", "publishCorrected", "publishDelay", "endToEnd", "endToEndCorrected"};
        Histogram[] agg = new Histogram[aggNames.length];
        for (int k = 0; k < agg.length; k++) {
            agg[k] = Histos.create();
            for (int i = 0; i < docs.size(); i++) {
                JsonNode h = docs.get(i).at("/x-streambench/histograms/" + aggNames[k]);
                if (!h.isTextual()) throw new ConfigException(names.get(i), "x-streambench.histograms." + aggNames[k], "missing");
                agg[k].add(Histos.decode(h.asText()));
            }
        }
        ObjectNode r = OmbResult.build(first.path("workload").asText(null), first.path("driver").asText(null),
                first.path("messageSize").asLong(), first.path("topics").asInt(), first.path("partitions").asInt(),
                first.path("producersPerTopic").asInt(), first.path("consumersPerTopic").asInt(), subs,
                periods, agg[0], agg[2], agg[3]);
        ObjectNode x = first.get("x-streambench").deepCopy();
        r.set("x-streambench", x);
        // each process judged its own measured phase; the run sustained its rate only if every part did
        ObjectNode mp = x.putObject("measuredPhase");
        ArrayNode mparts = mp.putArray("parts");
        Boolean sustained = Boolean.TRUE;
        long clientWarnings = 0, clientErrors = 0;
        for (JsonNode d : docs) {
            JsonNode pm = d.at("/x-streambench/measuredPhase");
            mparts.add(pm.isMissingNode() ? Fields.JSON.nullNode() : pm);
            if (!pm.path("sustained").isBoolean()) sustained = null;
            else if (sustained != null) sustained = sustained && pm.path("sustained").asBoolean();
            clientWarnings += d.at("/x-streambench/clientLog/warnings").asLong();
            clientErrors += d.at("/x-streambench/clientLog/errors").asLong();
        }
        if (sustained == null) mp.putNull("sustained"); else mp.put("sustained", sustained);
        if (x.path("clientLog").isObject()) {
            ((ObjectNode) x.get("clientLog")).put("warnings", clientWarnings);
            ((ObjectNode) x.get("clientLog")).put("errors", clientErrors);
        }
        ObjectNode proc = x.putObject("process");
        proc.putNull("index");
        proc.put("count", count);
        ArrayNode ml = proc.putArray("merged");
        for (int i = 0; i < docs.size(); i++) {
            ObjectNode pn = docs.get(i).at("/x-streambench/process").deepCopy();
            pn.put("file", names.get(i));
            ml.add(pn);
        }
        proc.set("startAt", first.at("/x-streambench/process/startAt"));
        x.put("startTime", minMax(docs, "startTime", true));
        x.put("endTime", minMax(docs, "endTime", false));
        x.put("measurementStartTime", minMax(docs, "measurementStartTime", true));
        x.put("measurementEndTime", minMax(docs, "measurementEndTime", false));
        double measSec = 0;
        for (JsonNode d : docs) measSec = Math.max(measSec, d.at("/x-streambench/measurementSeconds").asDouble());
        x.put("measurementSeconds", measSec);
        ObjectNode pr = (ObjectNode) x.get("producerRate");
        if (pr != null) {
            long inWindow = 0, dropped = 0;
            for (JsonNode d : docs) {
                inWindow += d.at("/x-streambench/producerRate/ackedInWindow").asLong();
                dropped += d.at("/x-streambench/producerRate/droppedScheduledSends").asLong();
            }
            pr.put("ackedInWindow", inWindow);
            pr.put("droppedScheduledSends", dropped);
            pr.put("achieved", measSec > 0 ? inWindow / measSec : 0);
            pr.put("achievedMBps", measSec > 0 ? inWindow / measSec * r.path("messageSize").asLong() / 1048576.0 : 0);
            pr.put("ackRate", measSec > 0 ? agg[0].getTotalCount() / measSec : 0);
            pr.put("processShare", 1.0);
        }
        x.set("publishLatencyMs", Histos.stats(agg[0], 1000.0));
        x.set("publishLatencyCorrected", Histos.stats(agg[1], 1000.0));
        x.set("endToEndLatencyMicros", Histos.stats(agg[3], 1.0));
        x.set("endToEndCorrectedMicros", Histos.stats(agg[4], 1.0));
        long neg = 0;
        for (JsonNode d : docs) neg += d.at("/x-streambench/endToEndNegativeSamples").asLong();
        x.put("endToEndNegativeSamples", neg);
        ObjectNode hs = x.putObject("histograms");
        hs.put("encoding", "HdrHistogram-V2-compressed-base64");
        hs.put("unit", "us");
        hs.put("significantDigits", 3);
        for (int k = 0; k < agg.length; k++) hs.put(aggNames[k], Histos.encode(agg[k]));
        ObjectNode pp = hs.putObject("perPeriod");
        for (int k = 0; k < perNames.length; k++) {
            ArrayNode a = pp.putArray(perNames[k]);
            for (Histogram[] h : perHists) a.add(Histos.encode(h[k]));
        }
        ObjectNode pc = x.putObject("periodCounts");
        pc.put("subscriptions", subs);
        ArrayNode ps = pc.putArray("seconds"), pa = pc.putArray("acked"), pe = pc.putArray("errors"),
                prc = pc.putArray("received"), pst = pc.putArray("sentTotal"), prt = pc.putArray("receivedTotal");
        for (OmbResult.Period p : periods) {
            ps.add(p.seconds); pa.add(p.acked); pe.add(p.errors); prc.add(p.received); pst.add(p.sentTotal); prt.add(p.receivedTotal);
        }
        x.set("timeSeries", mergeSeries(docs, subs));
        List<String> mergeWarnings = new ArrayList<>();
        x.set("audit", mergeAudit(names, docs, mergeWarnings));
        ObjectNode fan = FanOut.merge(names, docs);
        if (fan != null) x.set("fanOut", fan);
        ArrayNode wn = x.putArray("warnings");
        for (int i = 0; i < docs.size(); i++)
            for (JsonNode wj : docs.get(i).at("/x-streambench/warnings")) wn.add("part " + i + ": " + wj.asText());
        mergeWarnings.forEach(wn::add);
        return r;
    }

    private static String minMax(List<JsonNode> docs, String key, boolean min) {
        String best = null;
        for (JsonNode d : docs) {
            String v = d.at("/x-streambench/" + key).asText(null);
            if (v == null) continue;
            if (best == null || (min ? v.compareTo(best) < 0 : v.compareTo(best) > 0)) best = v;
        }
        return best;
    }

    private static ObjectNode mergeSeries(List<JsonNode> docs, int subs) {
        int n = 0;
        JsonNode f = null;   // the longest part's seconds and phases
        for (JsonNode d : docs) {
            JsonNode ts = d.at("/x-streambench/timeSeries");
            if (f == null || ts.get("t").size() > n) { n = ts.get("t").size(); f = ts; }
        }
        ObjectNode o = Fields.JSON.createObjectNode();
        o.put("intervalSeconds", 1);
        ArrayNode t = o.putArray("t"), ph = o.putArray("phase");
        for (int i = 0; i < n; i++) { t.add(f.get("t").get(i)); ph.add(f.get("phase").get(i)); }
        for (String k : new String[]{"publishRate", "publishErrorRate", "consumeRate"}) sum(o, docs, k, n);
        ArrayNode bl = o.putArray("backlog");
        for (int i = 0; i < n; i++) {
            long s = 0, rcv = 0;
            for (JsonNode d : docs) {
                s += held(d.at("/x-streambench/timeSeries/sentTotal"), i);
                rcv += held(d.at("/x-streambench/timeSeries/receivedTotal"), i);
            }
            bl.add(Math.max(0, subs * s - rcv));
        }
        sum(o, docs, "targetRate", n);
        for (String k : new String[]{"publishLatencyP99Ms", "publishLatencyCorrectedP99Ms", "endToEndP99Ms"}) {
            ArrayNode a = o.putArray(k);
            for (int i = 0; i < n; i++) {
                double mx = 0;
                for (JsonNode d : docs) mx = Math.max(mx, d.at("/x-streambench/timeSeries/" + k).path(i).asDouble(0));
                a.add(mx);
            }
        }
        for (String k : new String[]{"sentTotal", "receivedTotal"}) {
            ArrayNode a = o.putArray(k);
            for (int i = 0; i < n; i++) {
                long s = 0;
                for (JsonNode d : docs) s += held(d.at("/x-streambench/timeSeries/" + k), i);
                a.add(s);
            }
        }
        return o;
    }

    /** A running total at index i, or its last value once the part's series has ended (0 for an empty one). */
    private static long held(JsonNode totals, int i) {
        int n = totals.size();
        return n == 0 ? 0 : totals.get(Math.min(i, n - 1)).asLong();
    }

    private static void sum(ObjectNode o, List<JsonNode> docs, String k, int n) {
        ArrayNode a = o.putArray(k);
        for (int i = 0; i < n; i++) {
            double s = 0;
            for (JsonNode d : docs) s += d.at("/x-streambench/timeSeries/" + k).path(i).asDouble(0);   // 0 once a part ended
            a.add(s);
        }
    }

    private static final String[] COUNTERS = {"received", "unique", "duplicated", "outOfOrder"};

    /**
     * The audit of the whole run. Per subscription the parts' counters are summed (each process's consumers own
     * disjoint partitions, or disjoint shares of a shared subscription) and {@code lost} = all parts' acks − the summed
     * unique. A fan-out part lists under {@code leftOutSubscriptions} the subscriptions none of whose consumers in that
     * process connected; the other parts carry them too, with no consumers there and counters of 0
     * ({@code consumers: 0}). Such a subscription is left out of the merged audit as well, unless some part's consumers
     * of it connected: it is then audited over the parts that hold it (plus what late consumers in the parts that left
     * it out received), so a connected consumer's missing messages still count as lost.
     */
    static ObjectNode mergeAudit(List<String> names, List<JsonNode> docs, List<String> warnings) {
        ObjectNode a = Fields.JSON.createObjectNode();
        long sent = 0, acked = 0, errors = 0, foreign = 0;
        boolean drained = true;
        double wait = 0;
        ObjectNode per = Fields.JSON.createObjectNode(), left = Fields.JSON.createObjectNode();
        java.util.Map<String, java.util.SortedSet<Integer>> leftBy = new java.util.LinkedHashMap<>();
        Set<String> held = new HashSet<>();
        for (int i = 0; i < docs.size(); i++) {
            JsonNode au = docs.get(i).at("/x-streambench/audit");
            sent += au.path("sent").asLong();
            acked += au.path("acked").asLong();
            errors += au.path("sendErrors").asLong();
            foreign += au.path("foreign").asLong();
            drained &= au.path("drained").asBoolean();
            wait = Math.max(wait, au.path("drainWaitSeconds").asDouble());
            for (Iterator<String> it = au.path("receivedPerSubscription").fieldNames(); it.hasNext(); ) {
                String s = it.next();
                JsonNode src = au.path("receivedPerSubscription").get(s);
                JsonNode c = src.path("consumers");
                // a part written before the field: its entry may hold consumers, so it is counted (never hidden)
                if (c.isMissingNode()) held.add(s);
                else if (!c.isIntegralNumber() || c.asLong() < 0)
                    throw new ConfigException(names.get(i), "x-streambench.audit.receivedPerSubscription." + s + ".consumers",
                            "not a count (" + c + ")");
                else if (c.asLong() > 0) held.add(s);
                add(per, s, src, "consumers");
            }
            JsonNode lo = au.path("leftOutSubscriptions");
            if (lo.isMissingNode() || lo.isNull()) continue;
            if (!lo.isObject())
                throw new ConfigException(names.get(i), "x-streambench.audit.leftOutSubscriptions", "not an object (subscription name -> counters)");
            for (Iterator<String> it = lo.fieldNames(); it.hasNext(); ) {
                String s = it.next();
                if (!lo.get(s).isObject())
                    throw new ConfigException(names.get(i), "x-streambench.audit.leftOutSubscriptions." + s, "not an object");
                add(left, s, lo.get(s), "neverConnected");
                leftBy.computeIfAbsent(s, k -> new java.util.TreeSet<>()).add(i);
            }
        }
        // left out in some part: dropped if no part holds a connected consumer of it, else audited over the holders
        ObjectNode droppedNodes = Fields.JSON.createObjectNode();
        long droppedConsumers = 0, droppedLate = 0, partialLate = 0;
        List<String> partial = new ArrayList<>();
        Set<Integer> droppedParts = new java.util.TreeSet<>();
        for (Iterator<String> it = left.fieldNames(); it.hasNext(); ) {
            String s = it.next();
            JsonNode l = left.get(s);
            if (held.contains(s)) {
                ObjectNode tgt = (ObjectNode) per.get(s);
                for (String k : COUNTERS) tgt.put(k, tgt.path(k).asLong() + l.path(k).asLong());
                tgt.put("neverConnected", l.path("neverConnected").asLong());
                partial.add(s);
                partialLate += l.path("received").asLong();
            } else {
                per.remove(s);
                droppedNodes.set(s, l);
                droppedConsumers += l.path("neverConnected").asLong();
                droppedLate += l.path("received").asLong();
                droppedParts.addAll(leftBy.get(s));
            }
        }
        long lost = 0, dup = 0, ooo = 0;
        for (Iterator<String> it = per.fieldNames(); it.hasNext(); ) {
            ObjectNode s = (ObjectNode) per.get(it.next());
            long l = Math.max(0, acked - s.path("unique").asLong());
            s.put("lost", l);
            lost += l;
            dup += s.path("duplicated").asLong();
            ooo += s.path("outOfOrder").asLong();
        }
        if (droppedNodes.size() > 0)
            warnings.add(droppedNodes.size() + " subscriptions (" + droppedConsumers + " consumers) are left out of the merged audit,"
                    + " as the parts " + droppedParts + " left them out: none of their consumers connected within the deadline in"
                    + " any process (x-streambench.audit.leftOutSubscriptions)"
                    + (droppedLate > 0 ? "; consumers of them that connected later received " + droppedLate + " messages, not audited" : ""));
        if (!partial.isEmpty())
            warnings.add(partial.size() + " subscriptions had consumers that never connected in some processes and connected ones"
                    + " in others (first: " + partial.get(0) + "); they are audited over the processes whose consumers connected"
                    + (partialLate > 0 ? ", with the " + partialLate + " messages their late consumers received" : ""));
        a.put("sent", sent);
        a.put("acked", acked);
        a.put("sendErrors", errors);
        a.put("subscriptions", per.size());
        a.set("receivedPerSubscription", per);
        a.put("lost", lost);
        a.put("duplicated", dup);
        a.put("outOfOrder", ooo);
        a.put("foreign", foreign);
        a.put("drained", drained);
        a.put("drainWaitSeconds", wait);
        a.set("leftOutSubscriptions", droppedNodes);
        return a;
    }

    /** Adds one part's counters of subscription {@code s} (and the count field {@code countKey}) into {@code into}. */
    private static void add(ObjectNode into, String s, JsonNode src, String countKey) {
        ObjectNode tgt = into.has(s) ? (ObjectNode) into.get(s) : into.putObject(s);
        tgt.put("role", src.path("role").asText("tailing"));
        if (src.has(countKey) || tgt.has(countKey)) tgt.put(countKey, tgt.path(countKey).asLong() + src.path(countKey).asLong());
        for (String k : COUNTERS) tgt.put(k, tgt.path(k).asLong() + src.path(k).asLong());
    }
}
