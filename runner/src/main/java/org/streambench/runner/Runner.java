package org.streambench.runner;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.HdrHistogram.Histogram;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/** Executes one workload against one cluster: set-up, warm-up, (discovery | build+drain), measurement, clean-up. */
public final class Runner {
    public static final class Options {
        public JsonNode cluster;       // whole cluster.json or null
        public int index = 0, count = 1;
        public Long startAt;           // epoch ms shared by all processes
        public Long durationSeconds, warmupSeconds;
        /** wall-clock bound on the whole run (null: the workload's default); past it the run fails with a timeout */
        public Long deadlineSeconds;
        public String barrier;         // several processes: directory where they agree on the start (Barrier)
        /** the barrier directory is this host's own; a coordinator that sees every process's writes the start time */
        public boolean barrierCoordinated;
        /** found while validating (DriverConfig.checkAgainst): they go into the result's warnings */
        public final List<String> warnings = new ArrayList<>();
    }

    /** set once the deadline has passed: Main exits with status 3 (timeout) */
    static volatile boolean timedOut;
    /** what the run is doing now (set-up, warmup, discovery, build, drain, measure, flush, drain-wait, clean-up) */
    private volatile String phaseName = "set-up";

    enum Phase { WARMUP, DISCOVERY, RECOVER, BUILD, DRAIN, MEASURE }

    private static final int PERIOD_SECONDS = 10;
    private static final long FLUSH_MS = 30_000;
    private static final int[] PER_PERIOD = {Metrics.PUBLISH, Metrics.PUBLISH_CORRECTED, Metrics.PUBLISH_DELAY, Metrics.E2E};

    private final Workload w;
    private final DriverConfig dc;
    private final Options o;
    private final Metrics m = new Metrics();
    private final LongAdder receivedCatchUp = new LongAdder();
    private volatile boolean stopSenders;
    private volatile double targetRate; // msg/s for this process
    private volatile int rateVersion;
    private volatile long rateStartNanos; // start of the schedule segment of the current rateVersion
    // max-rate discovery by saturation (Saturation): the segment of the next rateVersion sends as fast as the cluster
    // takes it (up to the ceiling), behind this bound on this process's sends in flight (0: none)
    private volatile boolean saturating;
    private volatile long inFlightCap;
    public volatile boolean abort;

    private final List<Thread> senders = new ArrayList<>();
    private final List<Driver.Consumer> tailingConsumers = new ArrayList<>(), catchUpConsumers = new ArrayList<>();
    private final List<Audit> audits = new ArrayList<>();
    // consumers of each subscription (by name) this process was given, connected or not: the drain state's split
    // between the subscriptions whole in this process and those shared with the others (Barrier.drainState)
    private final Map<String, Integer> assignedHere = new HashMap<>();
    /** this process's consumers of each subscription that are in the audit (fan-out: those connected) */
    private final Map<String, Integer> auditedConsumers = new LinkedHashMap<>();
    /** fan-out: subscriptions left out of the audit (none of this process's consumers connected), with those consumers */
    private final Map<Audit, Integer> leftOut = new LinkedHashMap<>();
    private final java.util.Set<String> catchUpNames = new java.util.HashSet<>();
    private final List<String> warnings = new ArrayList<>();
    private volatile Throwable senderFailure;
    private final StallWatch stall = new StallWatch(StallWatch.LIMIT_MS);

    public Runner(Workload w, DriverConfig dc, Options o) {
        this.w = w;
        this.dc = dc;
        this.o = o;
        for (String warning : o.warnings) {
            warnings.add(warning);
            Log.warn(warning);
        }
    }

    private int tailSubs() { return w.subscriptionsPerTopic; }

    private int allSubs() { return w.subscriptionsPerTopic + w.catchUpSubscriptions; }

    // ------------------------------------------------------------------------------------------------

    private final class Sender extends Thread {
        final Driver.Producer[] producers;
        final int[] ids;
        final long[] seqs;
        final double share;
        final Payloads payloads;
        /** the rateVersion whose segment this sender follows (read and written by its own thread only) */
        private int version;

        Sender(int n, List<Driver.Producer> ps, List<Integer> pids, double share, long seed) {
            super("sender-" + n);
            setDaemon(true);
            producers = ps.toArray(new Driver.Producer[0]);
            ids = pids.stream().mapToInt(Integer::intValue).toArray();
            seqs = new long[ids.length];
            this.share = share;
            payloads = new Payloads(w, seed);
        }

        @Override
        public void run() {
            try {
                version = rateVersion;
                boolean sat = saturating; // the current segment saturates: no schedule debt is counted for it
                RateSchedule s = new RateSchedule(targetRate * share, startNanos);
                long i = 0;
                final int size = w.messageSize;
                final byte[][] reuse = new byte[producers.length][];
                for (int k = 0; k < producers.length; k++) if (producers[k].copiesPayloadOnSend()) reuse[k] = new byte[size];
                while (!stopSenders) {
                    if (version != rateVersion) {
                        version = rateVersion;
                        long from = rateStartNanos;
                        if (!sat) m.scheduleDropped.add(s.behind(from));
                        sat = saturating;
                        s.reset(targetRate * share, from);
                    }
                    long cap = inFlightCap;
                    if (cap > 0 && m.sent.sum() - m.acked.sum() - m.errors.sum() >= cap) {
                        LockSupport.parkNanos(100_000L);
                        continue;
                    }
                    // the wait ends early when a new segment begins (setRate unparks the senders): its first send is
                    // intended at its start, not one interval of the old rate later
                    final long intended = s.await(() -> stopSenders || version != rateVersion);
                    if (intended < 0) {
                        if (stopSenders) break;
                        continue;
                    }
                    if (intended == Long.MAX_VALUE) { LockSupport.parkNanos(10_000_000L); continue; }
                    int k = (int) (i % producers.length);
                    byte[] buf = reuse[k] != null ? reuse[k] : new byte[size];
                    System.arraycopy(payloads.template(i), 0, buf, 0, size);
                    final long send = System.nanoTime();
                    MessageHeader.write(buf, ids[k], seqs[k]++, Clock.toEpochMicros(send), Clock.toEpochMicros(intended));
                    m.sent.increment();
                    try {
                        producers[k].send(payloads.key(i), buf, err -> m.onSendComplete(intended, send, err));
                    } catch (RuntimeException e) {
                        m.errors.increment();
                    }
                    s.advance();
                    i++;
                }
            } catch (Throwable t) {
                senderFailure = t;
                Log.error(getName() + " failed: " + t);
            }
        }
    }

    private long startNanos;

    // ------------------------------------------------------------------------------------------------

    public ObjectNode run() throws Exception {
        long runStartMicros = Clock.nowMicros();
        String runId = o.startAt != null ? Long.toString(o.startAt, 36)
                : Long.toString(System.currentTimeMillis(), 36) + Integer.toString((int) (Math.random() * 1296), 36);
        String endpointBootstrap = null, endpointService = null, endpointHttp = null, endpointController = null;
        if (o.cluster != null) {
            endpointBootstrap = text(o.cluster.at("/kafka/bootstrapServers"));
            endpointService = text(o.cluster.at("/pulsar/serviceUrl"));
            endpointHttp = text(o.cluster.at("/pulsar/httpUrl"));
            endpointController = text(o.cluster.at("/pravega/controllerUri"));
            if (dc.type == DriverConfig.Type.KAFKA && endpointBootstrap == null)
                throw new ConfigException("--cluster", "kafka.bootstrapServers", "missing for a Kafka driver");
            if (dc.type == DriverConfig.Type.PULSAR && (endpointService == null || endpointHttp == null))
                throw new ConfigException("--cluster", "pulsar.serviceUrl/pulsar.httpUrl", "missing for a Pulsar driver");
            if (dc.type == DriverConfig.Type.PRAVEGA && endpointController == null)
                throw new ConfigException("--cluster", "pravega.controllerUri", "missing for a Pravega driver");
        }
        Driver driver = dc.type == DriverConfig.Type.KAFKA ? new KafkaDriver(dc, endpointBootstrap)
                : dc.type == DriverConfig.Type.PULSAR ? new PulsarDriver(dc, endpointService, endpointHttp)
                : new PravegaDriver(dc, endpointController);
        List<String> topics = driver.topicNames(runId, w.topics);
        boolean created = false;
        java.util.concurrent.CountDownLatch cleanedUp = new java.util.concurrent.CountDownLatch(1);
        Thread hook = new Thread(() -> {
            // SIGTERM/SIGINT: make the main thread fail, and let it clean up (close clients, delete topics)
            abort = true;
            stopSenders = true;
            try { cleanedUp.await(60, java.util.concurrent.TimeUnit.SECONDS); } catch (InterruptedException ignored) { }
        }, "omb-run-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        long deadlineSeconds = o.deadlineSeconds != null ? o.deadlineSeconds : w.defaultDeadlineSeconds();
        Thread watchdog = watchdog(deadlineSeconds, cleanedUp);
        try {
            Log.info("run " + runId + ": " + dc.type.name().toLowerCase() + " " + driver.endpoints() + ", topics " + topics);
            if (o.index == 0) {
                driver.createTopics(topics, w.partitionsPerTopic);
                created = true;
            } else {
                driver.waitForTopics(topics, w.partitionsPerTopic, 120_000);
            }
            ObjectNode result = runOn(driver, topics, runId, runStartMicros);
            Log.info("clean-up");
            phaseName = "clean-up";
            try { driver.closeClients(); } catch (Exception e) { Log.warn("close: " + e); }
            if (created) {
                if (o.count > 1) Thread.sleep(10_000); // let the other processes finish their drain before deleting
                try {
                    driver.deleteTopics(topics);
                } catch (Exception e) {
                    Log.warn("deleting topics failed: " + e);
                    ((ArrayNode) result.with("x-streambench").withArray("warnings")).add("deleting topics failed: " + e);
                }
            }
            ((ObjectNode) result.get("x-streambench")).put("endTime", Clock.iso(Clock.nowMicros()));
            return result;
        } catch (Throwable t) {
            stopSenders = true;
            try { driver.closeClients(); } catch (Exception e) { Log.warn("close: " + e); }
            if (created) {
                try { driver.deleteTopics(topics); } catch (Exception e) { Log.warn("deleting topics after the failure: " + e); }
            }
            throw t;
        } finally {
            stopSenders = true;
            closeQuietly(driver);
            cleanedUp.countDown();
            watchdog.interrupt();
            try { Runtime.getRuntime().removeShutdownHook(hook); } catch (IllegalStateException ignored) { }
        }
    }

    /**
     * A daemon that ends a run that is past its deadline, whatever it is blocked in: it logs the phase, makes the main
     * thread fail (which closes the clients and deletes the topics, each call bounded), waits up to 20 s for that
     * clean-up, then halts the JVM with status 3.
     */
    private Thread watchdog(long seconds, java.util.concurrent.CountDownLatch cleanedUp) {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(seconds * 1000L);
            } catch (InterruptedException e) {
                return; // the run ended in time
            }
            timedOut = true;
            Log.error("timeout: the run's deadline of " + seconds + " s passed in phase " + phaseName);
            System.err.println("omb-run: timeout: phase=" + phaseName + " deadlineSeconds=" + seconds);
            System.err.flush();
            abort = true;
            stopSenders = true;
            try { cleanedUp.await(20, java.util.concurrent.TimeUnit.SECONDS); } catch (InterruptedException ignored) { }
            Runtime.getRuntime().halt(3);
        }, "omb-run-deadline");
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static String text(JsonNode n) { return n == null || n.isMissingNode() || n.isNull() ? null : n.asText(); }

    private static void closeQuietly(Driver d) {
        try { d.close(); } catch (Exception e) { Log.warn("close: " + e); }
    }

    private void checkAbort() {
        if (abort) throw new IllegalStateException(timedOut ? "deadline passed in phase " + phaseName : "aborted by signal");
        if (senderFailure != null) throw new IllegalStateException("producer thread failed: " + senderFailure, senderFailure);
        long progress = m.acked.sum() + m.errors.sum(), inFlight = m.sent.sum() - progress;
        long stalled = stall.stalledSeconds(progress, inFlight, System.nanoTime());
        if (stalled >= 0)
            throw new IllegalStateException("the cluster stopped answering: no acknowledgement and no send error for "
                    + stalled + " s with " + inFlight + " sends in flight (phase " + phaseName + ")");
    }

    private ObjectNode runOn(Driver driver, List<String> topics, String runId, long runStartMicros) throws Exception {
        int totalProducers = w.totalProducers();
        // ---- subscriptions and consumers ----
        Map<String, Integer> expected = new LinkedHashMap<>();
        List<String> subNames = new ArrayList<>();
        for (int s = 0; s < allSubs(); s++) {
            boolean cu = s >= tailSubs();
            String name = cu ? "sub-" + runId + "-c" + (s - tailSubs()) : "sub-" + runId + "-" + s;
            subNames.add(name);
            if (cu) catchUpNames.add(name);
            audits.add(new Audit(name, totalProducers, w.partitionsPerTopic));
            expected.put(name, w.topics * w.consumerPerSubscription);
        }
        driver.runSubscriptions(subNames);
        int cidx = 0;
        FanOut fan = null; // fan-out workloads: consumers connect concurrently, per-consumer times (FanOut)
        if (w.fanOut()) {
            int total = w.topics * allSubs() * w.consumerPerSubscription, mineN = 0;
            for (int c = 0; c < total; c++) if (c % o.count == o.index) mineN++;
            fan = new FanOut(w, mineN);
        }
        int fanIdx = 0;
        for (int t = 0; t < w.topics; t++) {
            for (int s = 0; s < allSubs(); s++) {
                boolean cu = s >= tailSubs();
                Audit a = audits.get(s);
                for (int c = 0; c < w.consumerPerSubscription; c++, cidx++) {
                    if (cidx % o.count != o.index) continue;
                    assignedHere.merge(subNames.get(s), 1, Integer::sum);
                    Driver.Handler h = (payload, partition) -> {
                        if (!MessageHeader.valid(payload)) { a.recordForeign(); m.received.increment(); return; }
                        m.onReceive(MessageHeader.sendMicros(payload), MessageHeader.intendedMicros(payload), cu);
                        if (cu) receivedCatchUp.increment();
                        a.record(MessageHeader.producerId(payload), MessageHeader.sequence(payload), partition);
                    };
                    if (fan != null) {
                        fan.connect(driver, fanIdx, topics.get(t), subNames.get(s), h, () -> abort);
                        fanIdx++;
                        continue;
                    }
                    Driver.Consumer dcn = driver.createConsumer(topics.get(t), subNames.get(s), h);
                    auditedConsumers.merge(subNames.get(s), 1, Integer::sum);
                    if (cu) { dcn.pause(); catchUpConsumers.add(dcn); } else tailingConsumers.add(dcn);
                }
            }
        }
        if (fan != null) {
            tailingConsumers.addAll(fan.await(() -> abort));
            // one snapshot decides: a subscription none of whose consumers here connected is left out of this part's
            // audit and listed (audit.leftOutSubscriptions), so omb-merge leaves it out too unless another process's
            // consumers of it connected; a consumer connecting later still records into its (left-out) Audit
            int never = 0;
            for (var e : fan.perSubscription().entrySet()) {
                String sub = e.getKey();
                FanOut.SubConsumers c = e.getValue();
                never += c.consumers() - c.connected();
                if (c.connected() > 0) { auditedConsumers.put(sub, c.connected()); continue; }
                expected.remove(sub);
                for (Audit a : audits) if (a.name.equals(sub)) leftOut.put(a, c.consumers());
                audits.removeIf(a -> a.name.equals(sub));
            }
            if (never > 0)
                warnings.add(never + " consumers never connected within " + w.fanOutDeadlineSeconds
                        + " s (x-streambench.fanOut.neverConnected); the " + leftOut.size() + " subscriptions none of whose consumers"
                        + " in this process connected are left out of the audit (x-streambench.audit.leftOutSubscriptions)");
            // a directory barrier agrees here, once the consumers are connected; a coordinated one (hosts that share
            // no file system) below, once this process is wholly set up, because the coordinator's lead is short
            if (o.barrier != null && !o.barrierCoordinated) o.startAt = fan.barrier(o.barrier, o.index, o.count, () -> abort, false);
        }
        if (!expected.isEmpty()) driver.waitConsumersReady(expected, 120_000);
        Log.info("consumers ready: " + (tailingConsumers.size() + catchUpConsumers.size()) + " in this process");
        // ---- producers ----
        List<Driver.Producer> mine = new ArrayList<>();
        List<Integer> mineIds = new ArrayList<>();
        for (int t = 0; t < w.topics; t++)
            for (int p = 0; p < w.producersPerTopic; p++) {
                int g = t * w.producersPerTopic + p;
                if (g % o.count != o.index) continue;
                mine.add(driver.createProducer(topics.get(t)));
                mineIds.add(g);
            }
        Log.info("producers ready: " + mine.size() + " in this process");
        // several processes without a fan-out: agree on the start once every process has its producers
        if (o.barrier != null && (fan == null || o.barrierCoordinated))
            o.startAt = Barrier.await(o.barrier, o.index, o.count, 2_000, fan != null ? fan.barrierDeadlineMs() : 300_000L,
                    () -> abort, o.barrierCoordinated);
        double processShare = (double) mine.size() / totalProducers;
        boolean discovery = w.producerRate == 0;
        double globalRate = discovery ? w.discoveryInitialRate : w.producerRate;
        targetRate = globalRate * processShare;

        // ---- start ----
        if (o.startAt != null) {
            long waitMs = o.startAt - System.currentTimeMillis();
            if (waitMs < -1000) {
                // the processes' 10-s windows would not line up, so their parts could not be merged exactly
                throw new IllegalStateException("set-up finished " + (-waitMs) + " ms after --start-at " + o.startAt
                        + "; give the processes more lead time");
            } else if (waitMs < 0) {
                warnings.add("set-up finished " + (-waitMs) + " ms after --start-at; started late");
                Log.warn(warnings.get(warnings.size() - 1));
                startNanos = System.nanoTime();
            } else {
                startNanos = Clock.nanoAtEpochMillis(o.startAt);
                while (System.nanoTime() < startNanos) { checkAbort(); LockSupport.parkNanos(Math.min(startNanos - System.nanoTime(), 50_000_000L)); }
            }
        } else {
            startNanos = System.nanoTime();
        }
        int threads = Math.max(1, Math.min(mine.size(), Runtime.getRuntime().availableProcessors()));
        for (int n = 0; n < threads; n++) {
            List<Driver.Producer> ps = new ArrayList<>();
            List<Integer> ids = new ArrayList<>();
            for (int k = n; k < mine.size(); k += threads) { ps.add(mine.get(k)); ids.add(mineIds.get(k)); }
            if (ps.isEmpty()) continue;
            Sender s = new Sender(n, ps, ids, mine.isEmpty() ? 0 : (double) ps.size() / mine.size(), 1000L * o.index + n);
            senders.add(s);
        }
        long sendStartMicros = Clock.toEpochMicros(startNanos);
        long warmup = o.warmupSeconds != null ? o.warmupSeconds : w.warmupSeconds();
        long test = o.durationSeconds != null ? o.durationSeconds : w.testSeconds();
        Phase phase = warmup > 0 ? Phase.WARMUP : discovery ? Phase.DISCOVERY : w.backlogBytes > 0 ? Phase.BUILD : Phase.MEASURE;
        long phaseStartTick = 0, measureStartTick = -1, ombStartTick = -1;
        long measureStartMicros = -1, ombStartMicros = -1;
        if (phase == Phase.BUILD) { pauseAll(tailingConsumers); }
        if (phase != Phase.WARMUP && phase != Phase.DISCOVERY) {
            ombStartTick = 0; ombStartMicros = sendStartMicros; m.windowFrom = startNanos;
        }
        if (phase == Phase.MEASURE) { measureStartTick = 0; measureStartMicros = sendStartMicros; }
        rateStartNanos = startNanos;
        if (phase == Phase.DISCOVERY && w.saturate()) startSaturation(processShare);
        for (Thread s : senders) s.start();
        Log.info("producing at " + (discovery ? "discovery start rate " : "") + fmt(targetRate) + " msg/s in this process ("
                + threads + " sender threads)");

        // ---- tick loop ----

        TimeSeries ts = new TimeSeries();
        List<OmbResult.Period> periods = new ArrayList<>();
        // per-window histograms are kept encoded (compressed, a few KB each), not as live histograms: memory grows
        // by a few KB per 10 s, whatever the message rate
        List<String[]> periodEnc = new ArrayList<>();
        Histogram[] agg = newHists(), period = newHists(), recycle = null;
        Map<String, Histogram[]> phaseHists = new LinkedHashMap<>();
        long periodAcked = 0, periodErrors = 0, periodReceived = 0;
        int periodTicks = 0;
        long periodStartNanos = 0;

        // discovery state: one Window per step (judged after its settle seconds), the search over step verdicts
        ObjectNode rateDiscovery = null;
        ArrayNode steps = null;
        RateSearch search = discovery && !w.saturate() ? new RateSearch(w.discoveryInitialRate, w.discoveryMaxSteps, w.discoveryRetries, w.discoveryGrowthFactor,
                w.discoveryCeilingRate()) : null;
        Window step = new Window(), measureWin = new Window();
        int stepIndex = 0;
        Double settledRate = discovery ? null : (double) w.producerRate;
        if (discovery) {
            rateDiscovery = Fields.JSON.createObjectNode();
            rateDiscovery.put("initialRate", w.discoveryInitialRate);
            rateDiscovery.put("stepSeconds", w.discoveryStepSeconds);
            rateDiscovery.put("settleSeconds", w.discoverySettleSeconds);
            rateDiscovery.put("maxSteps", w.discoveryMaxSteps);
            rateDiscovery.put("retries", w.discoveryRetries);
            rateDiscovery.put("remeasures", w.discoveryRemeasures);
            rateDiscovery.put("maxPublishDelayMs", w.discoveryMaxPublishDelayMs);
            rateDiscovery.put("growthFactor", w.discoveryGrowthFactor);
            if (!Double.isInfinite(w.discoveryMaxRateMBps)) {
                rateDiscovery.put("maxRateMBps", w.discoveryMaxRateMBps);
                rateDiscovery.put("ceilingRate", w.discoveryCeilingRate());
            }
            rateDiscovery.put("mode", w.discoveryMode);
            if (w.saturate()) {
                rateDiscovery.put("saturateSeconds", w.discoverySaturateSeconds);
                rateDiscovery.put("confirmFraction", w.discoveryConfirmFraction);
                rateDiscovery.put("maxInFlight", saturationCap(1.0));
                rateDiscovery.put("criterion", "capacity = the lower of the acknowledged rate and the rate each tailing subscription "
                        + "consumed, over the saturation phase less its settle seconds (producers unthrottled up to the ceiling, behind "
                        + "maxInFlight sends in flight); the measured phase at confirmFraction of it must hold: send rate >= 97 % of "
                        + "target, publish-delay p99 < maxPublishDelayMs, in-flight sends and consumer backlog without growth, else it "
                        + "runs again lower");
            } else {
                rateDiscovery.put("criterion", "send rate >= 97 % of target, publish-delay p99 < maxPublishDelayMs, in-flight sends and "
                        + "consumer backlog without growth (least-squares trend <= 5 % of the window's messages) and below one window's "
                        + "messages, over the step less its settle seconds; a failed step is retried before the search turns down");
            }
            steps = Fields.JSON.createArrayNode();
            rateDiscovery.putArray("rejectedMeasurements");
        }
        long droppedBeforeMeasure = 0;
        // backlog state
        long targetBacklogMsgs = w.backlogBytes > 0 ? w.backlogBytes / w.messageSize : 0;
        ObjectNode backlogInfo = null;
        long releaseTick = -1, releaseReceived = 0, buildStartTick = -1;
        long releaseMicros = -1, chaseMicros = -1, drainedMicros = -1, backlogAtRelease = 0;
        long drainedReceived = -1, releaseAcked = 0, chaseAcked = 0;
        boolean drainTimedOut = false;
        if (w.backlogBytes > 0) {
            backlogInfo = Fields.JSON.createObjectNode();
            backlogInfo.put("targetBytes", w.backlogBytes);
            backlogInfo.put("targetMessages", targetBacklogMsgs);
            backlogInfo.put("drainRatio", w.backlogDrainRatio);
            if (phase == Phase.BUILD) { buildStartTick = 0; backlogInfo.put("buildStartTime", Clock.iso(sendStartMicros)); }
        }
        // mixed state
        ObjectNode mixed = null;
        long cuStartMicros = -1, cuDoneMicros = -1, cuStartReceived = 0, cuDoneReceived = 0;
        long cuTargetMsgs = 0;
        if (w.mixed()) {
            mixed = Fields.JSON.createObjectNode();
            mixed.put("catchUpSubscriptions", w.catchUpSubscriptions);
            mixed.put("catchUpStartBacklogGB", w.catchUpStartBacklogGB);
            cuTargetMsgs = (long) Math.ceil(w.catchUpStartBacklogGB * (1L << 30) / w.messageSize);
        }

        phaseName = phase.name().toLowerCase();
        if (phase == Phase.DISCOVERY) step.begin(0, w.discoverySettleSeconds, 0, 0, 0, 0);
        if (phase == Phase.MEASURE) measureWin.begin(0, 0, 0, 0, 0, 0);
        long prevSent = 0, prevAcked = 0, prevErr = 0, prevRecv = 0;
        long prevNanos = startNanos;
        long tick = 0;
        long lastTickNanos = startNanos; // the clock of the last tick: where the last phase ended
        while (true) {
            long tickNanos = startNanos + (tick + 1) * 1_000_000_000L;
            while (System.nanoTime() < tickNanos) {
                checkAbort();
                LockSupport.parkNanos(Math.min(tickNanos - System.nanoTime(), 100_000_000L));
            }
            tick++;
            long nowNanos = System.nanoTime();
            lastTickNanos = nowNanos;
            // a loop that stalled (a GC pause, a starved CPU) catches up with the clock at once: the seconds it missed
            // each get an element of the series (the gap's average rates) and the phases run by the clock, so the series
            // has an element per second of the run and a phase lasts its seconds, not its iterations (a 5-s stall of a
            // fan-out part once left 12 elements for a measured phase of 17 s)
            long skipped = Math.max(0, (nowNanos - startNanos) / 1_000_000_000L - tick);
            tick += skipped;
            double dt = (nowNanos - prevNanos) / 1e9;
            prevNanos = nowNanos;
            recycle = m.interval(recycle);
            long sent = m.sent.sum(), acked = m.acked.sum(), err = m.errors.sum(), recv = m.received.sum();
            long dAcked = acked - prevAcked, dErr = err - prevErr, dRecv = recv - prevRecv;
            prevSent = sent; prevAcked = acked; prevErr = err; prevRecv = recv;
            long backlog = Math.max(0, allSubs() * sent - recv);
            long rcu = receivedCatchUp.sum();
            long pending = sent - acked - err;
            // the backlog of the tailing subscriptions (catch-up ones are paused on purpose); one process sees it whole
            long tailBacklog = o.count == 1 ? Math.max(0, tailSubs() * sent - (recv - rcu)) : 0;
            ts.add(tick, skipped, phase.name().toLowerCase(), dAcked / dt, dErr / dt,
                    dRecv / dt, backlog, targetRate, recycle, sent, recv);
            for (Histogram[] ph : phaseHists.values()) addAll(ph, recycle);
            if (phase == Phase.DISCOVERY) step.tick(tick, sent, acked, pending, tailBacklog, recycle[Metrics.PUBLISH_DELAY]);
            if (phase == Phase.MEASURE) measureWin.tick(tick, sent, acked, pending, tailBacklog, recycle[Metrics.PUBLISH_DELAY]);
            boolean omb = ombStartTick >= 0;
            if (omb) {
                if (periodTicks == 0) periodStartNanos = nowNanos - (long) (dt * 1e9);
                addAll(period, recycle);
                addAll(agg, recycle);
                periodAcked += dAcked; periodErrors += dErr; periodReceived += dRecv;
                periodTicks += 1 + skipped;
                if (periodTicks >= PERIOD_SECONDS) {
                    OmbResult.Period p = new OmbResult.Period();
                    p.seconds = (nowNanos - periodStartNanos) / 1e9;
                    p.acked = periodAcked; p.errors = periodErrors; p.received = periodReceived;
                    p.sentTotal = sent; p.receivedTotal = recv;
                    periods.add(p);
                    String[] enc = new String[PER_PERIOD.length];
                    for (int k = 0; k < enc.length; k++) enc[k] = Histos.encode(period[PER_PERIOD[k]]);
                    periodEnc.add(enc);
                    for (Histogram h : period) h.reset();
                    periodAcked = periodErrors = periodReceived = 0;
                    periodTicks = 0;
                }
            }
            if (tick % PERIOD_SECONDS <= skipped) progress(ts, phase, backlog);

            // ---- phase transitions ----
            long inPhase = tick - phaseStartTick;
            Phase next = phase;
            switch (phase) {
                case WARMUP:
                    if (inPhase >= warmup) next = discovery ? Phase.DISCOVERY : w.backlogBytes > 0 ? Phase.BUILD : Phase.MEASURE;
                    break;
                case DISCOVERY: {
                    if (w.saturate()) {
                        if (tick - step.startTick < w.discoverySaturateSeconds) break;
                        long[] bl = step.backlog();
                        // what each tailing subscription received over the window: sent, less its backlog's growth
                        double consumed = o.count == 1 && tailSubs() > 0 && bl.length > 0
                                ? step.sentInWindow() - (double) (bl[bl.length - 1] - bl[0]) / tailSubs() : Double.NaN;
                        double ceiling = w.discoveryCeilingRate();
                        Saturation est = Saturation.estimate(step.seconds(), step.ackedInWindow(), consumed,
                                ceiling * processShare, w.discoveryConfirmFraction);
                        saturating = false;
                        inFlightCap = 0;
                        search = RateSearch.settledAt(est.ceilingReached ? ceiling : est.settled / processShare, ceiling);
                        ObjectNode sn = rateDiscovery.putObject("saturation");
                        sn.put("judgedSeconds", est.seconds);
                        sn.put("sent", step.sentInWindow());
                        sn.put("acked", step.ackedInWindow());
                        sn.put("ackRate", est.ackRate);
                        if (Double.isNaN(est.consumeRate)) sn.putNull("consumeRate"); else sn.put("consumeRate", est.consumeRate);
                        sn.put("capacity", est.capacity);
                        sn.put("inFlightPeak", StepJudge.max(step.inFlight()));
                        sn.put("processShare", processShare);
                        settledRate = recordSettled(search, rateDiscovery, true);
                        Log.info(String.format("saturation: acked %.0f msg/s, consumed %s msg/s per subscription over %.0f s, "
                                        + "in flight at most %d: capacity %.0f msg/s, measured at %.0f msg/s%s",
                                est.ackRate, Double.isNaN(est.consumeRate) ? "-" : String.format("%.0f", est.consumeRate),
                                est.seconds, StepJudge.max(step.inFlight()), est.capacity, settledRate * processShare,
                                est.ceilingReached ? " (the ceiling)" : ""));
                        setRate(settledRate * processShare);
                        next = Phase.RECOVER;
                        break;
                    }
                    long inStep = tick - step.startTick;
                    if (inStep < w.discoveryStepSeconds) break;
                    double stepRate = search.current();
                    boolean retry = search.retrying();
                    long[] inFlight = step.inFlight(), bl = step.backlog();
                    StepJudge.Verdict v = StepJudge.judge(stepRate, step.seconds(), step.sentInWindow(), inFlight, bl,
                            tailSubs(), step.delay.getValueAtPercentile(99), (long) (w.discoveryMaxPublishDelayMs * 1000));
                    ObjectNode st = steps.addObject();
                    st.put("index", stepIndex);
                    st.put("targetRate", stepRate);
                    st.put("retry", retry);
                    st.put("judgedSeconds", step.seconds());
                    st.put("publishRate", step.seconds() > 0 ? step.ackedInWindow() / step.seconds() : 0);
                    st.put("sendRate", v.sendRate);
                    st.put("pendingStart", inFlight.length > 0 ? inFlight[0] : 0);
                    st.put("pendingEnd", pending);
                    st.put("inFlightGrowth", v.inFlightGrowth);
                    st.put("maxInFlight", v.maxInFlight);
                    st.put("consumeRate", ts.meanConsume((long) step.seconds()));
                    st.put("backlogStart", bl.length > 0 ? bl[0] : 0);
                    st.put("backlogEnd", tailBacklog);
                    st.put("backlogGrowth", v.backlogGrowth);
                    st.put("publishDelayP99Micros", v.delayP99Micros);
                    st.put("pass", v.pass);
                    ArrayNode why = st.putArray("reasons");
                    v.reasons.forEach(why::add);
                    Log.info(String.format("rate discovery step %d%s: target %.0f msg/s, sent %.0f, acked %.0f, in flight %d -> %d, backlog %d -> %d, delay p99 %d us: %s",
                            stepIndex, retry ? " (retry)" : "", stepRate, v.sendRate, st.get("publishRate").asDouble(),
                            inFlight.length > 0 ? inFlight[0] : 0, pending, bl.length > 0 ? bl[0] : 0, tailBacklog, v.delayP99Micros,
                            v.pass ? "pass" : "FAIL (" + String.join("; ", v.reasons) + ")"));
                    stepIndex++;
                    if (search.record(v.pass)) {
                        settledRate = recordSettled(search, rateDiscovery, true);
                        if (search.accepted() == 0) warnings.add("rate discovery found no sustainable rate; settled on " + fmt(settledRate));
                        setRate(settledRate * processShare);
                        next = Phase.RECOVER;
                    } else {
                        setRate(search.current() * processShare);
                        step.begin(tick, w.discoverySettleSeconds, sent, acked, pending, tailBacklog);
                    }
                    break;
                }
                case RECOVER: {
                    // a search usually ends on a failed step above the settled rate: the sends in flight and the
                    // consumers' backlog it left are paid off at the settled rate before the measured phase starts,
                    // so the measured phase judges the rate, not the overload before it
                    long bound = recoveredBound(targetRate);
                    boolean clear = pending <= bound && tailBacklog <= tailSubs() * bound;
                    if (inPhase >= w.discoverySettleSeconds && clear) {
                        next = Phase.MEASURE;
                    } else if (inPhase >= maxRecoverSeconds(w)) {
                        warnings.add(String.format("after rate discovery, %d sends in flight and a backlog of %d msgs were "
                                + "still above %d after %d s at the settled rate; measurement started anyway", pending, tailBacklog, bound, inPhase));
                        Log.warn(warnings.get(warnings.size() - 1));
                        next = Phase.MEASURE;
                    }
                    if (next == Phase.MEASURE) rateDiscovery.put("recoverySeconds", inPhase);
                    break;
                }
                case BUILD:
                    if (backlog >= targetBacklogMsgs) {
                        next = Phase.DRAIN;
                        resumeAll(tailingConsumers);
                        releaseTick = tick; releaseMicros = Clock.nowMicros(); releaseReceived = recv; releaseAcked = acked;
                        backlogAtRelease = backlog;
                        phaseHists.put("drain", newHists());
                        Log.info("backlog " + backlog + " msgs reached: consumers released");
                    }
                    break;
                case DRAIN:
                    if (backlog <= Math.max((1 - w.backlogDrainRatio) * targetBacklogMsgs, chaseThreshold())) {
                        drainedMicros = Clock.nowMicros();
                        drainedReceived = recv;
                        next = Phase.MEASURE;
                    } else if (tick - releaseTick > Math.max(600, 10 * (releaseTick - buildStartTick))) {
                        drainTimedOut = true;
                        warnings.add("backlog did not drain within " + (tick - releaseTick) + " s; measurement started anyway");
                        next = Phase.MEASURE;
                    }
                    break;
                case MEASURE:
                    if (w.mixed()) {
                        long cuBacklogPerSub = sent - rcu / w.catchUpSubscriptions;
                        if (cuStartMicros < 0 && cuBacklogPerSub >= cuTargetMsgs) {
                            cuStartMicros = Clock.nowMicros(); cuStartReceived = rcu;
                            Histogram[] bh = phaseHists.remove("before");
                            if (bh != null) mixed.set("before", phaseStats(bh));
                            phaseHists.put("during", newHists());
                            resumeAll(catchUpConsumers);
                            Log.info("catch-up subscriptions started at backlog " + cuBacklogPerSub + " msgs");
                        } else if (cuStartMicros >= 0 && cuDoneMicros < 0
                                && cuBacklogPerSub <= Math.max(1000, 0.2 * targetRate)) {
                            cuDoneMicros = Clock.nowMicros(); cuDoneReceived = rcu;
                            if (phaseHists.containsKey("during")) mixed.set("during", phaseStats(phaseHists.remove("during")));
                            Log.info("catch-up complete");
                        }
                    }
                    if (inPhase >= test) {
                        next = null;
                        // a max-rate measured phase that did not hold its rate is run again lower (bounded), so the
                        // rate reported is one a whole measured phase sustained, not one a step of seconds passed
                        StepJudge.Verdict v = discovery && o.count == 1 && !w.mixed() ? judgeMeasured(measureWin, targetRate) : null;
                        double keptUp = v == null ? Double.NaN : StepJudge.keptUpRate(v, measureWin.seconds(), tailSubs());
                        if (v != null && !v.pass && search.measuredPhaseFailed(w.discoveryRemeasures, keptUp)) {
                            ObjectNode rj = ((ArrayNode) rateDiscovery.get("rejectedMeasurements")).addObject();
                            rj.put("targetRate", settledRate);
                            rj.put("judgedSeconds", measureWin.seconds());
                            rj.put("sendRate", v.sendRate);
                            rj.put("inFlightGrowth", v.inFlightGrowth);
                            rj.put("backlogGrowth", v.backlogGrowth);
                            if (Double.isFinite(keptUp)) rj.put("keptUpRate", keptUp); else rj.putNull("keptUpRate");
                            rj.put("publishDelayP99Micros", v.delayP99Micros);
                            ArrayNode why = rj.putArray("reasons");
                            v.reasons.forEach(why::add);
                            warnings.add(String.format("the measured phase at %s msg/s did not hold (%s); measured again at %s msg/s",
                                    fmt(settledRate), String.join("; ", v.reasons), fmt(search.settled())));
                            Log.warn(warnings.get(warnings.size() - 1));
                            ts.relabel(measureStartTick, "measure", "rejected");
                            settledRate = recordSettled(search, rateDiscovery, false);
                            setRate(settledRate * processShare);
                            // the OMB periods, the aggregate histograms and the achieved-rate window start again with
                            // the next measured phase
                            periods.clear();
                            periodEnc.clear();
                            for (Histogram h : agg) h.reset();
                            for (Histogram h : period) h.reset();
                            periodAcked = periodErrors = periodReceived = 0;
                            periodTicks = 0;
                            ombStartTick = -1;
                            m.windowFrom = Long.MAX_VALUE;
                            m.ackedInWindow.reset();
                            next = Phase.RECOVER;
                        }
                    }
                    break;
                default:
                    break;
            }
            // chase completion (backlog mode), checked in every phase after release
            if (releaseTick >= 0 && chaseMicros < 0 && tick > releaseTick
                    && backlog <= chaseThreshold()) {
                chaseMicros = Clock.nowMicros();
                chaseAcked = recv - releaseReceived;
                Histogram[] dh = phaseHists.remove("drain");
                if (dh != null) {
                    backlogInfo.set("publishLatencyDuringDrainMs", Histos.stats(dh[Metrics.PUBLISH], 1000.0));
                    backlogInfo.set("publishLatencyCorrectedDuringDrainMs", Histos.stats(dh[Metrics.PUBLISH_CORRECTED], 1000.0));
                    backlogInfo.put("publishRateDuringDrain", (acked - releaseAcked) / ((chaseMicros - releaseMicros) / 1e6));
                }
                Log.info("backlog chase complete after " + fmt((chaseMicros - releaseMicros) / 1e6) + " s");
            }
            if (next == null) break;
            if (next != phase) {
                Log.info("phase " + phase.name().toLowerCase() + " -> " + next.name().toLowerCase() + " at t=" + tick + " s");
                if (next == Phase.DISCOVERY) {
                    step.begin(tick, w.discoverySettleSeconds, sent, acked, pending, tailBacklog);
                    if (w.saturate()) startSaturation(processShare);
                }
                if ((next == Phase.BUILD || next == Phase.MEASURE) && ombStartTick < 0) {
                    droppedBeforeMeasure = m.scheduleDropped.sum();
                    // the measured phase starts a fresh schedule segment: sends the warm-up (or discovery) fell behind
                    // on are dropped, not sent back-to-back inside the measured phase, where they would inflate its
                    // rate; the achieved rate counts acknowledged sends by their intended time inside the window
                    setRate(targetRate);
                    m.windowFrom = rateStartNanos;
                    ombStartTick = tick; ombStartMicros = Clock.toEpochMicros(rateStartNanos);
                }
                if (next == Phase.BUILD) {
                    pauseAll(tailingConsumers);
                    buildStartTick = tick;
                    backlogInfo.put("buildStartTime", Clock.iso(Clock.nowMicros()));
                }
                if (next == Phase.MEASURE) {
                    measureWin.begin(tick, 0, sent, acked, pending, tailBacklog);
                    measureStartTick = tick; measureStartMicros = Clock.nowMicros();
                    if (w.mixed()) phaseHists.put("before", newHists());
                }
                phase = next;
                phaseName = next.name().toLowerCase();
                phaseStartTick = tick;
            }
        }
        // the measured phase ended at its last tick, by the clock: not when the loop got round to leaving, which a
        // stall after that tick's reading (the recorders' interval swap waiting on a descheduled consumer thread, a
        // GC) can put seconds later with no second of the series to show for it (a fan-out part on 2 cores once
        // recorded a measured phase of 17.8 s with 14 elements in its series)
        long measureEndNanos = lastTickNanos;
        m.windowUntil = measureEndNanos;
        long measureEndMicros = Clock.toEpochMicros(measureEndNanos);
        // ---- stop ----
        stopSenders = true;
        phaseName = "flush";
        for (Thread s : senders) s.join(60_000);
        long flushDeadline = System.currentTimeMillis() + FLUSH_MS;
        for (Driver.Producer p : mine) {
            try {
                p.flush(Math.max(1, flushDeadline - System.currentTimeMillis()));
            } catch (java.util.concurrent.TimeoutException e) {
                warnings.add("flushing the producers did not finish within " + FLUSH_MS / 1000 + " s");
                Log.warn(warnings.get(warnings.size() - 1));
                break;
            } catch (Exception e) {
                Log.warn("flush: " + e);
            }
        }
        phaseName = "drain-wait";
        long deadline = System.currentTimeMillis() + 60_000;
        while (m.acked.sum() + m.errors.sum() < m.sent.sum() && System.currentTimeMillis() < deadline) {
            checkAbort();
            Thread.sleep(50);
        }
        if (m.acked.sum() + m.errors.sum() < m.sent.sum())
            warnings.add((m.sent.sum() - m.acked.sum() - m.errors.sum()) + " sends still pending after 60 s");
        if (mixed != null && phaseHists.containsKey("before")) mixed.set("before", phaseStats(phaseHists.remove("before")));
        if (mixed != null && phaseHists.containsKey("during")) mixed.set("during", phaseStats(phaseHists.remove("during")));
        if (mixed != null && !mixed.has("before")) mixed.putNull("before");
        resumeAll(tailingConsumers);
        resumeAll(catchUpConsumers);
        // ---- drain wait for the audit ----
        long drainStart = System.currentTimeMillis();
        boolean drained = false;
        long lastRecv = -1, stableSince = System.currentTimeMillis(), lastDrainWrite = 0;
        while (System.currentTimeMillis() - drainStart < 60_000) {
            checkAbort();
            if (o.count == 1) {
                long acked = m.acked.sum();
                boolean all = true;
                for (Audit a : audits) if (a.unique() < acked) { all = false; break; }
                if (all) { drained = true; break; }
            } else if (o.barrier != null) {
                // several processes: what one should receive depends on the others' acknowledged sends, so they agree
                // through the barrier's directory (a coordinator's `drained` on hosts that share none,
                // testbeds/runner.py); a fan-out part's thousands of subscriptions, each whole in one process, are one
                // line of its state (Barrier.drainState)
                long now = System.currentTimeMillis();
                int perSub = w.topics * w.consumerPerSubscription;
                if (now - lastDrainWrite >= 200) {
                    Barrier.writeDrain(o.barrier, o.index, m.acked.sum(), audits, assignedHere, perSub);
                    lastDrainWrite = now;
                }
                if (o.barrierCoordinated ? java.nio.file.Files.exists(java.nio.file.Path.of(o.barrier, "drained"))
                        : Barrier.drainAgreed(o.barrier, o.count)) {
                    Barrier.writeDrain(o.barrier, o.index, m.acked.sum(), audits, assignedHere, perSub);
                    drained = true;
                    break;
                }
            } else {
                // several processes with a --start-at and no barrier: a quiet spell of 3 s decides
                long r = m.received.sum();
                if (r != lastRecv) { lastRecv = r; stableSince = System.currentTimeMillis(); }
                else if (System.currentTimeMillis() - stableSince > 3000) { drained = true; break; }
            }
            Thread.sleep(50);
        }
        double drainWait = (System.currentTimeMillis() - drainStart) / 1000.0;
        if (!drained) warnings.add("subscriptions did not receive every acknowledged message within 60 s after the producers stopped");

        // ---- result ----
        for (int i = 0; i < periods.size(); i++) {
            OmbResult.Period p = periods.get(i);
            p.publish = Histos.decode(periodEnc.get(i)[0]);
            p.publishDelay = Histos.decode(periodEnc.get(i)[2]);
            p.e2e = Histos.decode(periodEnc.get(i)[3]);
        }
        ObjectNode r = OmbResult.build(w.name, dc.name, w.messageSize, w.topics, w.partitionsPerTopic, w.producersPerTopic,
                w.consumerPerSubscription, allSubs(), periods, agg[Metrics.PUBLISH], agg[Metrics.PUBLISH_DELAY], agg[Metrics.E2E]);
        ObjectNode x = r.putObject("x-streambench");
        x.put("formatVersion", 1);
        x.set("runner", Main.runnerInfo());
        x.put("workloadFile", w.file);
        x.put("driverFile", dc.file);
        x.set("workload", w.echo);
        x.set("driver", dc.echo);
        x.set("cluster", o.cluster);
        x.set("endpoints", driver.endpoints());
        ObjectNode proc = x.putObject("process");
        proc.put("index", o.index);
        proc.put("count", o.count);
        if (o.startAt != null) proc.put("startAt", o.startAt); else proc.putNull("startAt");
        x.put("startTime", Clock.iso(runStartMicros));
        x.put("endTime", Clock.iso(Clock.nowMicros()));
        x.put("measurementStartTime", Clock.iso(ombStartMicros >= 0 ? ombStartMicros : measureEndMicros));
        x.put("measurementEndTime", Clock.iso(measureEndMicros));
        x.put("warmupSeconds", Math.max(0, ((ombStartMicros >= 0 ? ombStartMicros : measureEndMicros) - sendStartMicros) / 1e6));
        x.put("measurementSeconds", ombStartMicros >= 0 ? (measureEndMicros - ombStartMicros) / 1e6 : 0);
        ArrayNode tn = x.putArray("topicNames");
        topics.forEach(tn::add);
        ObjectNode pr = x.putObject("producerRate");
        if (discovery) pr.putNull("target"); else pr.put("target", (double) w.producerRate);
        pr.put("settled", settledRate == null ? 0 : settledRate);
        double measSec = ombStartMicros >= 0 ? (measureEndMicros - ombStartMicros) / 1e6 : 0;
        long aggCount = agg[Metrics.PUBLISH].getTotalCount();
        long inWindow = m.ackedInWindow.sum();
        pr.put("ackedInWindow", inWindow);
        pr.put("achieved", measSec > 0 ? inWindow / measSec : 0);
        pr.put("achievedMBps", measSec > 0 ? inWindow / measSec * w.messageSize / (1024.0 * 1024.0) : 0);
        pr.put("ackRate", measSec > 0 ? aggCount / measSec : 0);
        long dropped = m.scheduleDropped.sum(), droppedAtStart = dropped - droppedBeforeMeasure;
        pr.put("droppedScheduledSends", dropped);
        pr.put("droppedAtMeasureStart", droppedAtStart);
        if (settledRate != null && settledRate > 0 && droppedAtStart > Math.max(1, settledRate * processShare))
            warnings.add("the producers were " + fmt(droppedAtStart / (settledRate * processShare))
                    + " s behind their schedule when the measured phase started; those sends were dropped"
                    + (discovery ? " (the last discovery step could not keep up)" : " (the warm-up may be too short, or the rate is not sustainable)"));
        x.set("measuredPhase", measuredVerdict(measureWin, settledRate, processShare, measSec, inWindow));
        pr.put("processShare", processShare);
        x.set("publishLatencyMs", Histos.stats(agg[Metrics.PUBLISH], 1000.0));
        x.set("publishLatencyCorrected", Histos.stats(agg[Metrics.PUBLISH_CORRECTED], 1000.0));
        x.set("endToEndLatencyMicros", Histos.stats(agg[Metrics.E2E], 1.0));
        x.set("endToEndCorrectedMicros", Histos.stats(agg[Metrics.E2E_CORRECTED], 1.0));
        if (w.mixed()) x.set("endToEndCatchUpMicros", Histos.stats(agg[Metrics.E2E_CATCHUP], 1.0));
        x.put("endToEndNegativeSamples", m.e2eNegative.sum());
        ObjectNode hs = x.putObject("histograms");
        hs.put("encoding", "HdrHistogram-V2-compressed-base64");
        hs.put("unit", "us");
        hs.put("significantDigits", 3);
        for (int i = 0; i < Metrics.N; i++) {
            if (i == Metrics.E2E_CATCHUP && !w.mixed()) continue;
            hs.put(Metrics.NAMES[i], Histos.encode(agg[i]));
        }
        ObjectNode pp = hs.putObject("perPeriod");
        for (int k = 0; k < PER_PERIOD.length; k++) {
            ArrayNode a = pp.putArray(Metrics.NAMES[PER_PERIOD[k]]);
            for (String[] enc : periodEnc) a.add(enc[k]);
        }
        for (OmbResult.Period p : periods) { p.publish = p.publishDelay = p.e2e = null; }
        ObjectNode pc = x.putObject("periodCounts");
        pc.put("subscriptions", allSubs());
        ArrayNode ps = pc.putArray("seconds"), pa = pc.putArray("acked"), pe = pc.putArray("errors"),
                prc = pc.putArray("received"), pst = pc.putArray("sentTotal"), prt = pc.putArray("receivedTotal");
        for (OmbResult.Period p : periods) {
            ps.add(p.seconds); pa.add(p.acked); pe.add(p.errors); prc.add(p.received); pst.add(p.sentTotal); prt.add(p.receivedTotal);
        }
        x.set("timeSeries", ts.toJson(measureStartTick));
        x.set("audit", auditJson(m.sent.sum(), m.acked.sum(), m.errors.sum(), audits, catchUpNames, auditedConsumers, leftOut,
                o.count == 1, drained, drainWait));
        x.set("rateDiscovery", rateDiscovery == null ? null : rateDiscovery.set("steps", steps));
        if (backlogInfo != null) {
            backlogInfo.put("releaseTime", releaseMicros >= 0 ? Clock.iso(releaseMicros) : null);
            backlogInfo.put("drainedTime", drainedMicros >= 0 ? Clock.iso(drainedMicros) : null);
            backlogInfo.put("chaseCompleteTime", chaseMicros >= 0 ? Clock.iso(chaseMicros) : null);
            backlogInfo.put("buildSeconds", releaseTick >= 0 ? (double) (releaseTick - buildStartTick) : null);
            backlogInfo.put("backlogAtRelease", backlogAtRelease);
            Double chase = chaseMicros >= 0 ? (chaseMicros - releaseMicros) / 1e6 : null;
            backlogInfo.put("chaseTimeSeconds", chase);
            Double drainRate = chase != null && chase > 0 ? chaseAcked / chase : null;
            backlogInfo.put("drainRateMsgs", drainRate);
            backlogInfo.put("drainRateMBps", drainRate == null ? null : drainRate * w.messageSize / (1024.0 * 1024.0));
            backlogInfo.put("drained", drainedMicros >= 0 && !drainTimedOut);
            if (!backlogInfo.has("publishLatencyDuringDrainMs")) {
                Histogram[] dh = phaseHists.remove("drain");
                backlogInfo.set("publishLatencyDuringDrainMs", dh == null ? null : Histos.stats(dh[Metrics.PUBLISH], 1000.0));
                backlogInfo.set("publishLatencyCorrectedDuringDrainMs", dh == null ? null : Histos.stats(dh[Metrics.PUBLISH_CORRECTED], 1000.0));
                backlogInfo.putNull("publishRateDuringDrain");
            }
            if (releaseTick < 0) warnings.add("the backlog target was never reached; consumers were never released");
        }
        x.set("backlog", backlogInfo);
        if (mixed != null) {
            mixed.put("catchUpStartTime", cuStartMicros >= 0 ? Clock.iso(cuStartMicros) : null);
            mixed.put("catchUpCompleteTime", cuDoneMicros >= 0 ? Clock.iso(cuDoneMicros) : null);
            Double chase = cuDoneMicros >= 0 ? (cuDoneMicros - cuStartMicros) / 1e6 : null;
            mixed.put("chaseTimeSeconds", chase);
            Double rate = chase != null && chase > 0 ? (cuDoneReceived - cuStartReceived) / chase : null;
            mixed.put("catchUpRateMsgs", rate);
            mixed.put("catchUpRateMBps", rate == null ? null : rate * w.messageSize / (1024.0 * 1024.0));
            if (!mixed.has("during")) mixed.putNull("during");
            if (cuStartMicros < 0) warnings.add("the catch-up subscriptions never started (backlog target not reached in the measured phase)");
        }
        x.set("mixed", mixed);
        x.set("clientLog", ClientLogCounter.summary());
        String storm = ClientLogCounter.stormWarning();
        if (storm != null) warnings.add(storm);
        if (fan != null) x.set("fanOut", fan.toJson());
        ArrayNode wn = x.putArray("warnings");
        warnings.forEach(wn::add);
        Driver.closeParallel(tailingConsumers);
        Driver.closeParallel(catchUpConsumers);
        return r;
    }

    /**
     * The audit block of a result. {@code consumers} per subscription: this process's consumers of it in the audit (0:
     * none here, its counters are 0; only omb-merge, summing the parts, audits it). {@code leftOutSubscriptions}: the
     * fan-out subscriptions none of whose consumers here connected within the deadline, with those consumers' count
     * ({@code neverConnected}) and what any of them received after connecting late (normally 0): in no {@code lost}
     * of this part, and omb-merge leaves them out unless another process's consumers of them connected.
     * {@code lost} only in a lone process ({@code single}); a part's acks are its own producers'.
     */
    static ObjectNode auditJson(long sent, long acked, long sendErrors, List<Audit> audits, java.util.Set<String> catchUp,
            Map<String, Integer> consumers, Map<Audit, Integer> leftOut, boolean single, boolean drained, double drainWait) {
        ObjectNode au = Fields.JSON.createObjectNode();
        au.put("sent", sent);
        au.put("acked", acked);
        au.put("sendErrors", sendErrors);
        au.put("subscriptions", audits.size());
        ObjectNode per = au.putObject("receivedPerSubscription");
        long lost = 0, dup = 0, ooo = 0, foreign = 0;
        for (Audit a : audits) {
            ObjectNode an = per.putObject(a.name);
            long uniq = a.unique();
            an.put("role", catchUp.contains(a.name) ? "catchUp" : "tailing");
            an.put("consumers", consumers.getOrDefault(a.name, 0));
            an.put("received", a.received());
            an.put("unique", uniq);
            an.put("duplicated", a.duplicated());
            an.put("outOfOrder", a.outOfOrder());
            long l = Math.max(0, acked - uniq);
            if (single) an.put("lost", l); else an.putNull("lost");
            lost += l; dup += a.duplicated(); ooo += a.outOfOrder(); foreign += a.foreign();
        }
        if (single) au.put("lost", lost); else au.putNull("lost");
        au.put("duplicated", dup);
        au.put("outOfOrder", ooo);
        au.put("foreign", foreign);
        au.put("drained", drained);
        au.put("drainWaitSeconds", drainWait);
        ObjectNode lo = au.putObject("leftOutSubscriptions");
        leftOut.forEach((a, never) -> {
            ObjectNode n = lo.putObject(a.name);
            n.put("role", catchUp.contains(a.name) ? "catchUp" : "tailing");
            n.put("neverConnected", never);
            n.put("received", a.received());
            n.put("unique", a.unique());
            n.put("duplicated", a.duplicated());
            n.put("outOfOrder", a.outOfOrder());
        });
        return au;
    }

    /**
     * Whether the measured phase sustained its rate: the achieved rate against the target (a warning when it missed by
     * more than 3 %, in every mode), and the StepJudge criteria over the whole phase (backlog and in-flight bounded).
     */
    private ObjectNode measuredVerdict(Window win, Double target, double processShare, double measSec, long inWindow) {
        ObjectNode n = Fields.JSON.createObjectNode();
        if (target == null || target <= 0 || win.seconds() <= 0 || measSec <= 0) {
            n.putNull("sustained");
            return n;
        }
        double perProcess = target * processShare, achieved = inWindow / measSec;
        StepJudge.Verdict v = judgeMeasured(win, perProcess);
        boolean rateMet = achieved >= StepJudge.MIN_SEND_FRACTION * perProcess;
        boolean backlogBounded = v.reasons.stream().noneMatch(r -> r.startsWith("consumer backlog"));
        boolean inFlightBounded = v.reasons.stream().noneMatch(r -> r.startsWith("in-flight"));
        n.put("targetRate", perProcess);
        n.put("achievedRate", achieved);
        n.put("rateMet", rateMet);
        n.put("sendRate", v.sendRate);
        n.put("inFlightGrowth", v.inFlightGrowth);
        n.put("maxInFlight", v.maxInFlight);
        n.put("inFlightBounded", inFlightBounded);
        if (o.count == 1 && tailSubs() > 0) {
            n.put("backlogGrowth", v.backlogGrowth);
            n.put("maxBacklog", v.maxBacklog);
            n.put("backlogBounded", backlogBounded);
        } else {
            n.putNull("backlogGrowth"); n.putNull("maxBacklog"); n.putNull("backlogBounded");
        }
        n.put("publishDelayP99Micros", v.delayP99Micros);
        n.put("sustained", rateMet && v.pass);
        ArrayNode why = n.putArray("reasons");
        if (!rateMet) why.add(String.format("achieved %.0f msg/s, below %.0f %% of %.0f", achieved, 100 * StepJudge.MIN_SEND_FRACTION, perProcess));
        v.reasons.forEach(why::add);
        if (!rateMet)
            warnings.add(String.format("the measured phase achieved %.0f msg/s, %.1f %% below its target of %.0f msg/s",
                    achieved, 100 * (1 - achieved / perProcess), perProcess));
        if (!backlogBounded)
            warnings.add(String.format("the consumers fell behind in the measured phase: backlog grew by %.0f messages (max %d)",
                    v.backlogGrowth, v.maxBacklog));
        if (!inFlightBounded)
            warnings.add(String.format("acknowledgements fell behind in the measured phase: sends in flight grew by %.0f (max %d)",
                    v.inFlightGrowth, v.maxInFlight));
        return n;
    }

    /** The StepJudge criteria over a measured phase at {@code perProcess} msg/s (the backlog only in a lone process). */
    private StepJudge.Verdict judgeMeasured(Window win, double perProcess) {
        return StepJudge.judge(perProcess, win.seconds(), win.sentInWindow(), win.inFlight(), win.backlog(),
                o.count == 1 ? tailSubs() : 0, win.delay.getValueAtPercentile(99), (long) (w.discoveryMaxPublishDelayMs * 1000));
    }

    /** Per-second samples of one judged window (a discovery step, or the measured phase). */
    private static final class Window {
        long startTick;
        int settle;
        boolean judging;
        long sent0, acked0, sentLast, ackedLast;
        final Histogram delay = Histos.create();
        private final List<long[]> samples = new ArrayList<>(); // {inFlight, backlog}

        void begin(long tick, int settleSeconds, long sent, long acked, long inFlight, long backlog) {
            startTick = tick;
            settle = settleSeconds;
            judging = false;
            samples.clear();
            delay.reset();
            if (settleSeconds == 0) startJudging(sent, acked, inFlight, backlog);
        }

        private void startJudging(long sent, long acked, long inFlight, long backlog) {
            judging = true;
            sent0 = sentLast = sent;
            acked0 = ackedLast = acked;
            delay.reset();
            samples.clear();
            samples.add(new long[] {inFlight, backlog});
        }

        void tick(long tick, long sent, long acked, long inFlight, long backlog, Histogram delayInterval) {
            if (!judging) {
                if (tick - startTick >= settle) startJudging(sent, acked, inFlight, backlog);
                return;
            }
            delay.add(delayInterval);
            samples.add(new long[] {inFlight, backlog});
            sentLast = sent;
            ackedLast = acked;
        }

        double seconds() { return Math.max(0, samples.size() - 1); }

        long sentInWindow() { return sentLast - sent0; }

        long ackedInWindow() { return ackedLast - acked0; }

        long[] inFlight() { return samples.stream().mapToLong(a -> a[0]).toArray(); }

        long[] backlog() { return samples.stream().mapToLong(a -> a[1]).toArray(); }
    }

    private ObjectNode phaseStats(Histogram[] h) {
        ObjectNode n = Fields.JSON.createObjectNode();
        n.set("publishLatencyMs", Histos.stats(h[Metrics.PUBLISH], 1000.0));
        n.set("publishLatencyCorrectedMs", Histos.stats(h[Metrics.PUBLISH_CORRECTED], 1000.0));
        n.set("endToEndTailingMicros", Histos.stats(h[Metrics.E2E], 1.0));
        return n;
    }

    /** "backlog ≈ 0": what is in flight at a healthy latency (0.2 s of the rate, at least 1 000 msgs) per subscription */
    /** in flight (and backlog per tailing subscription) that counts as paid off: 0.1 s of the rate, at least 500 */
    static long recoveredBound(double ratePerProcess) { return (long) Math.max(500, 0.1 * ratePerProcess); }

    /** the longest the recovery after rate discovery may take: twice a step, at least 10 s */
    static long maxRecoverSeconds(Workload w) { return Math.max(10, 2L * w.discoveryStepSeconds); }

    private double chaseThreshold() { return allSubs() * Math.max(1000, 0.2 * targetRate); }

    /**
     * The search's settled rate into the result (settledRate, and ceilingReached as it stands now: a measured phase
     * run again lower takes it back), with the warning that the ceiling bounded it when {@code atSearchEnd}; returns it.
     */
    private double recordSettled(RateSearch search, ObjectNode rd, boolean atSearchEnd) {
        double settled = search.settled();
        rd.put("settledRate", settled);
        rd.put("ceilingReached", search.ceilingReached());
        if (atSearchEnd && search.ceilingReached())
            warnings.add("rate discovery stopped at its ceiling, " + fmt(settled) + " msg/s (maxRateMBps "
                    + w.discoveryMaxRateMBps + "): the system sustained at least that much");
        return settled;
    }

    /** this process's bound on sends in flight while saturating ({@code share}: its share of the producers) */
    private long saturationCap(double share) {
        long cap = w.discoveryMaxInFlight > 0 ? w.discoveryMaxInFlight
                : Saturation.defaultMaxInFlight(w.messageSize, w.discoveryCeilingRate());
        return Math.max(1, (long) Math.ceil(cap * share));
    }

    /** the senders' next segment saturates: unthrottled up to the ceiling, behind the bound on sends in flight */
    private void startSaturation(double share) {
        double ceiling = w.discoveryCeilingRate();
        inFlightCap = saturationCap(share);
        saturating = true;
        setRate(Double.isFinite(ceiling) ? ceiling * share : Saturation.UNBOUNDED_RATE);
        Log.info("saturating for " + w.discoverySaturateSeconds + " s: " + (Double.isFinite(ceiling) ? "up to " + fmt(ceiling * share)
                + " msg/s, " : "unthrottled, ") + "at most " + inFlightCap + " sends in flight");
    }

    /**
     * Starts a new schedule segment at rate r now. The senders waiting for a send of the old segment are woken, so the
     * new segment's first send leaves at its start: a sender that waited out the old interval first (up to 1 s at
     * 1 msg/s) sent it that late, and the measured phase, which begins with a new segment, recorded the wait as
     * publish delay (the fan-out runs at 1 msg/s were flagged suspect for it, 1.0-1.6 s).
     */
    private void setRate(double r) {
        targetRate = r;
        rateStartNanos = System.nanoTime();
        rateVersion++;
        for (Thread s : senders) LockSupport.unpark(s);
    }

    private static void pauseAll(List<Driver.Consumer> cs) { for (Driver.Consumer c : cs) c.pause(); }

    private static void resumeAll(List<Driver.Consumer> cs) { for (Driver.Consumer c : cs) c.resume(); }

    private static Histogram[] newHists() {
        Histogram[] h = new Histogram[Metrics.N];
        for (int i = 0; i < h.length; i++) h[i] = Histos.create();
        return h;
    }

    private static void addAll(Histogram[] into, Histogram[] from) {
        for (int i = 0; i < into.length; i++) into[i].add(from[i]);
    }

    static String fmt(double d) { return String.format("%.1f", d); }

    private void progress(TimeSeries ts, Phase phase, long backlog) {
        double[] last = ts.lastWindow(PERIOD_SECONDS);
        Log.info(String.format("[%s] Pub rate %8.1f msg/s / %6.1f MB/s | Pub err %6.1f err/s | Cons rate %8.1f msg/s / %6.1f MB/s | Backlog: %6.1f K | Pub Latency p99 (ms) %7.3f | Pub corrected p99 (ms) %7.3f | E2E p99 (ms) %7.3f",
                phase.name().toLowerCase(), last[0], last[0] * w.messageSize / 1048576.0, last[1], last[2],
                last[2] * w.messageSize / 1048576.0, backlog / 1000.0, last[3], last[4], last[5]));
    }
}
