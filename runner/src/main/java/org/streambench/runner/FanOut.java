package org.streambench.runner;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.HdrHistogram.Histogram;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.BooleanSupplier;

/**
 * Fan-out consumers (study 003: one topic, thousands of consumers). Consumers are connected concurrently with at
 * most {@code connectConcurrency} in flight; each one's connect start, connected and first-message times are kept
 * (epoch µs, 0 = never) in primitive arrays, so the bookkeeping costs a few dozen bytes per consumer.
 * "Connected" is when the system has attached the consumer: Pulsar's subscribe completed, Kafka's first partition
 * assignment (group joined). Reported under {@code x-streambench.fanOut}; {@link #merge} joins the parts of several
 * runner processes on one clock.
 */
final class FanOut {
    /** file descriptors a consumer holds in the runner: Kafka a selector (epoll + eventfd) and a socket per broker it
     * talks to (bootstrap, group coordinator, partition leader): 6.2 measured with 200 consumers; Pulsar shares the client's connections */
    static final int KAFKA_FDS_PER_CONSUMER = 6, PULSAR_FDS_PER_CONSUMER = 0;
    /** what the JVM, the client libraries, producers and the admin client hold besides the consumers */
    static final int BASE_FDS = 1000;

    private final int n;
    private final int concurrency;
    private final long deadlineSeconds;
    private final AtomicLongArray start, connected, first, received;
    private final String[] subscription;
    private final List<Driver.Consumer> consumers = new ArrayList<>();
    private final List<Throwable> failures = new ArrayList<>();
    private final Semaphore inFlight;
    private int launched;
    private long deadlineNanos = Long.MAX_VALUE;

    FanOut(Workload w, int consumersInThisProcess) {
        this.n = consumersInThisProcess;
        this.concurrency = w.fanOutConcurrency;
        this.deadlineSeconds = w.fanOutDeadlineSeconds;
        start = new AtomicLongArray(n);
        connected = new AtomicLongArray(n);
        first = new AtomicLongArray(n);
        received = new AtomicLongArray(n);
        subscription = new String[n];
        inFlight = new Semaphore(concurrency);
    }

    /**
     * Bad input, before anything connects: a layout the system lacks, or (checkFds: a real run, not --validate-only)
     * more consumers than this process's open-file limit allows.
     */
    static void check(Workload w, DriverConfig d, int processCount, boolean checkFds) {
        if (!w.fanOut()) return;
        if (w.mixed()) throw new ConfigException(w.file, "x-streambench.fanOut", "cannot be combined with catchUpSubscriptions");
        // a fan-out run measures what every consumer receives: idle consumers (Kafka's without a partition, Pravega's
        // readers without a segment; a steady run only warns of them) would make it meaningless
        if (d.type == DriverConfig.Type.KAFKA && w.consumerPerSubscription > w.partitionsPerTopic)
            throw new ConfigException(w.file, "consumerPerSubscription", w.consumerPerSubscription + " consumers share one subscription of "
                    + w.partitionsPerTopic + " partition(s), but Kafka has no shared subscription: a consumer group gives each partition"
                    + " to one consumer, so " + (w.consumerPerSubscription - w.partitionsPerTopic) + " would receive nothing (driver "
                    + d.file + "); use subscriptionsPerTopic N with consumerPerSubscription 1 (N consumer groups)");
        if (d.type == DriverConfig.Type.PRAVEGA && w.consumerPerSubscription > w.partitionsPerTopic)
            throw new ConfigException(w.file, "consumerPerSubscription", w.consumerPerSubscription + " readers share one reader group of "
                    + w.partitionsPerTopic + " segment(s), but Pravega has no shared subscription: a reader group gives each segment"
                    + " to one reader, so " + (w.consumerPerSubscription - w.partitionsPerTopic) + " would receive nothing in this fan-out"
                    + " run (driver " + d.file + "); use subscriptionsPerTopic N with consumerPerSubscription 1 (N reader groups)");
        long total = (long) w.topics * w.subscriptionsPerTopic * w.consumerPerSubscription;
        long mine = (total + processCount - 1) / processCount;
        int per = d.type == DriverConfig.Type.KAFKA ? KAFKA_FDS_PER_CONSUMER : PULSAR_FDS_PER_CONSUMER;
        long limit = checkFds ? fdLimit() : -1;
        long need = BASE_FDS + mine * per;
        if (limit > 0 && need > limit) {
            String field = w.consumerPerSubscription > 1 ? "consumerPerSubscription" : "subscriptionsPerTopic";
            throw new ConfigException(w.file, field, total + " consumers (" + mine + " in each of " + processCount
                    + " runner process(es)) need about " + need + " file descriptors (" + BASE_FDS + " + " + per
                    + " per " + d.type.name().toLowerCase() + " consumer), over this process's open-file limit of " + limit
                    + " (ulimit -n); raise the limit or split the consumers with --process-count");
        }
    }

    static long fdLimit() {
        var os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.UnixOperatingSystemMXBean u) return u.getMaxFileDescriptorCount();
        return -1;
    }

    /** Wraps a consumer's handler to keep its first-message time and count. */
    Driver.Handler wrap(int i, Driver.Handler h) {
        return (payload, partition) -> {
            if (first.get(i) == 0) first.compareAndSet(i, 0, Clock.nowMicros());
            received.incrementAndGet(i);
            h.onMessage(payload, partition);
        };
    }

    /**
     * Starts connecting consumer {@code i} (0..n-1 in this process); blocks while {@code connectConcurrency}
     * connects are in flight. Returns false (launching nothing) once the deadline has passed.
     */
    boolean connect(Driver driver, int i, String topic, String sub, Driver.Handler handler, BooleanSupplier abort) throws InterruptedException {
        if (launched == 0) deadlineNanos = System.nanoTime() + TimeUnit.SECONDS.toNanos(deadlineSeconds);
        subscription[i] = sub;
        if (System.nanoTime() > deadlineNanos) return false;
        while (!inFlight.tryAcquire(100, TimeUnit.MILLISECONDS)) {
            if (abort.getAsBoolean()) throw new IllegalStateException("aborted by signal");
            if (System.nanoTime() > deadlineNanos) return false;
        }
        launched++;
        start.set(i, Clock.nowMicros());
        CompletableFuture<Driver.Consumer> f;
        try {
            f = driver.connectConsumer(topic, sub, wrap(i, handler));
        } catch (Exception e) {
            f = CompletableFuture.failedFuture(e);
        }
        f.whenComplete((c, err) -> {
            if (err == null) connected.set(i, Clock.nowMicros());
            synchronized (consumers) {
                if (c != null) consumers.add(c);
                if (err != null && failures.size() < 10) failures.add(err);
            }
            inFlight.release();
        });
        return true;
    }

    /** Waits until every launched consumer is connected or failed, or the deadline. Returns the consumers created. */
    List<Driver.Consumer> await(BooleanSupplier abort) throws InterruptedException {
        while (inFlight.availablePermits() < concurrency && System.nanoTime() < deadlineNanos) {
            if (abort.getAsBoolean()) throw new IllegalStateException("aborted by signal");
            Thread.sleep(20);
        }
        int ok = connectedCount();
        Log.info("fan-out: " + ok + " of " + n + " consumers connected in " + Runner.fmt(connectionSeconds()) + " s"
                + (ok < n ? " (" + (n - ok) + " not within " + deadlineSeconds + " s" + (failures.isEmpty() ? "" : "; first error: " + failures.get(0)) + ")" : ""));
        synchronized (consumers) { return new ArrayList<>(consumers); }
    }

    /**
     * Several runner processes of one fan-out run: each writes {@code ready-<index>} (epoch ms) once its consumers are
     * connected and waits for all; every process then starts producing at the same moment, 10 s after the last one
     * was ready (the time set-up needs for producers and Kafka's group check). Returns that start (epoch ms).
     */
    long barrier(String dir, int index, int count, BooleanSupplier abort, boolean coordinated) throws Exception {
        return Barrier.await(dir, index, count, 10_000, barrierDeadlineMs(), abort, coordinated);
    }

    /** How long a process waits at the start barrier for the others to connect their consumers. */
    long barrierDeadlineMs() {
        return (deadlineSeconds + 300) * 1000L;
    }

    int connectedCount() {
        int k = 0;
        for (int i = 0; i < n; i++) if (connected.get(i) != 0) k++;
        return k;
    }

    /** This process's consumers of one subscription, and how many of them have connected. */
    record SubConsumers(int consumers, int connected) {}

    /**
     * Every subscription that has consumers in this process (in connect order), with their count and how many are
     * connected now: one snapshot, so the subscriptions left out of the audit and the counts written with them agree.
     */
    Map<String, SubConsumers> perSubscription() {
        Map<String, int[]> c = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            if (subscription[i] == null) continue;
            int[] k = c.computeIfAbsent(subscription[i], s -> new int[2]);
            k[0]++;
            if (connected.get(i) != 0) k[1]++;
        }
        Map<String, SubConsumers> out = new LinkedHashMap<>();
        c.forEach((s, k) -> out.put(s, new SubConsumers(k[0], k[1])));
        return out;
    }

    /** Subscriptions none of whose consumers (in this process) connected. */
    Set<String> unconnectedSubscriptions() {
        Set<String> out = new LinkedHashSet<>();
        perSubscription().forEach((s, c) -> { if (c.connected() == 0) out.add(s); });
        return out;
    }

    private long firstStart() {
        long m = Long.MAX_VALUE;
        for (int i = 0; i < n; i++) if (start.get(i) != 0) m = Math.min(m, start.get(i));
        return m == Long.MAX_VALUE ? 0 : m;
    }

    private long lastConnected() {
        long m = 0;
        for (int i = 0; i < n; i++) m = Math.max(m, connected.get(i));
        return m;
    }

    double connectionSeconds() {
        long a = firstStart(), b = lastConnected();
        return a == 0 || b == 0 ? 0 : (b - a) / 1e6;
    }

    ObjectNode toJson() {
        long base = firstStart();
        long[][] arrays = new long[4][n];
        for (int i = 0; i < n; i++) {
            arrays[0][i] = start.get(i);
            arrays[1][i] = connected.get(i);
            arrays[2][i] = first.get(i);
            arrays[3][i] = received.get(i);
        }
        ObjectNode x = Fields.JSON.createObjectNode();
        x.put("connectConcurrency", concurrency);
        x.put("connectDeadlineSeconds", deadlineSeconds);
        fill(x, List.of(new Part(base, arrays)));
        return x;
    }

    /** One process's per-consumer arrays: start, connected, first message (epoch µs, 0 = never), messages received. */
    private record Part(long base, long[][] a) {}

    /**
     * Fills the summary from the per-consumer arrays of one or several processes, on one clock (epoch µs): the
     * connection time runs from the first connect start to the last consumer connected; "connectedAfter" is each
     * consumer's connected time since that first start (the study's histogram), "connectLatency" its own connect.
     */
    private static void fill(ObjectNode x, List<Part> parts) {
        long base = Long.MAX_VALUE, last = 0;
        int total = 0, ok = 0, never = 0, silent = 0;
        long minRecv = Long.MAX_VALUE, maxRecv = 0;
        for (Part p : parts) {
            for (int i = 0; i < p.a[0].length; i++) {
                if (p.a[0][i] != 0) base = Math.min(base, p.a[0][i]);
                last = Math.max(last, p.a[1][i]);
            }
        }
        if (base == Long.MAX_VALUE) base = 0;
        Histogram latency = Histos.create(), after = Histos.create();
        ArrayNode st = Fields.JSON.createArrayNode(), co = Fields.JSON.createArrayNode(), fm = Fields.JSON.createArrayNode(),
                rc = Fields.JSON.createArrayNode();
        for (Part p : parts) {
            long[][] a = p.a;
            for (int i = 0; i < a[0].length; i++) {
                total++;
                st.add(a[0][i] == 0 ? -1 : (a[0][i] - base) / 1000);
                co.add(a[1][i] == 0 ? -1 : (a[1][i] - base) / 1000);
                fm.add(a[2][i] == 0 ? -1 : (a[2][i] - base) / 1000);
                rc.add(a[3][i]);
                if (a[1][i] == 0) { never++; continue; }
                ok++;
                latency.recordValue(Math.max(0, a[1][i] - a[0][i]));
                after.recordValue(Math.max(0, a[1][i] - base));
                minRecv = Math.min(minRecv, a[3][i]);
                maxRecv = Math.max(maxRecv, a[3][i]);
                if (a[3][i] == 0) silent++;
            }
        }
        x.put("consumers", total);
        x.put("connected", ok);
        x.put("neverConnected", never);
        x.put("firstConnectStartTime", base == 0 ? null : Clock.iso(base));
        x.put("lastConnectedTime", last == 0 ? null : Clock.iso(last));
        x.put("connectionTimeSeconds", base == 0 || last == 0 ? null : (last - base) / 1e6);
        x.set("connectLatencyMs", Histos.stats(latency, 1000.0));
        x.set("connectedAfterMs", Histos.stats(after, 1000.0));
        x.put("receivedPerConsumerMin", ok == 0 ? 0 : minRecv);
        x.put("receivedPerConsumerMax", maxRecv);
        x.put("connectedWithoutMessages", silent);
        ObjectNode h = x.putObject("histograms");
        h.put("encoding", "HdrHistogram-V2-compressed-base64");
        h.put("unit", "us");
        h.put("connectLatency", Histos.encode(latency));
        h.put("connectedAfter", Histos.encode(after));
        ObjectNode pc = x.putObject("perConsumer");
        pc.put("baseTime", base == 0 ? null : Clock.iso(base));
        pc.put("baseEpochMicros", base);
        pc.put("unit", "ms since baseEpochMicros; -1 = never");
        pc.set("connectStart", st);
        pc.set("connected", co);
        pc.set("firstMessage", fm);
        pc.set("received", rc);
    }

    /** The fanOut block of a run split across processes: per-consumer arrays re-based onto one clock. */
    static ObjectNode merge(List<String> names, List<JsonNode> docs) {
        List<Part> parts = new ArrayList<>();
        ObjectNode out = null;
        for (int d = 0; d < docs.size(); d++) {
            JsonNode f = docs.get(d).at("/x-streambench/fanOut");
            if (f.isMissingNode() || f.isNull()) {
                if (out != null) throw new ConfigException(names.get(d), "x-streambench.fanOut", "missing, but other parts have it");
                continue;
            }
            if (out == null) {
                if (d > 0) throw new ConfigException(names.get(0), "x-streambench.fanOut", "missing, but other parts have it");
                out = Fields.JSON.createObjectNode();
                out.set("connectConcurrency", f.get("connectConcurrency"));
                out.set("connectDeadlineSeconds", f.get("connectDeadlineSeconds"));
            }
            JsonNode pc = f.path("perConsumer");
            long b = pc.path("baseEpochMicros").asLong(0);
            String[] keys = {"connectStart", "connected", "firstMessage", "received"};
            int len = pc.path("connectStart").size();
            long[][] a = new long[4][len];
            for (int k = 0; k < 4; k++) {
                JsonNode arr = pc.path(keys[k]);
                if (!arr.isArray() || arr.size() != len)
                    throw new ConfigException(names.get(d), "x-streambench.fanOut.perConsumer." + keys[k], "missing or of another length than connectStart");
                for (int i = 0; i < len; i++) {
                    long v = arr.get(i).asLong();
                    a[k][i] = k == 3 ? v : v < 0 ? 0 : b + v * 1000;
                }
            }
            parts.add(new Part(b, a));
        }
        if (out == null) return null;
        fill(out, parts);
        return out;
    }
}
