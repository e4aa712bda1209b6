package org.streambench.runner;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;

/** An OMB workload file (every field, OMB's defaults), validated strictly, plus the x-streambench extension. */
public final class Workload {
    public enum KeyDistributor { NO_KEY, KEY_ROUND_ROBIN, RANDOM_NANO }

    static final Set<String> FIELDS = Set.of("name", "topics", "partitionsPerTopic", "keyDistributor", "messageSize",
            "useRandomizedPayloads", "randomBytesRatio", "randomizedPayloadPoolSize", "payloadFile",
            "subscriptionsPerTopic", "producersPerTopic", "consumerPerSubscription", "producerRate",
            "consumerBacklogSizeGB", "backlogDrainRatio", "testDurationMinutes", "warmupDurationMinutes",
            "x-streambench");
    static final Set<String> EXT_FIELDS = Set.of("testDurationSeconds", "warmupDurationSeconds",
            "catchUpSubscriptions", "catchUpStartBacklogGB", "consumerBacklogSizeBytes", "rateDiscovery", "fanOut");
    static final Set<String> DISCOVERY_FIELDS = Set.of("initialRate", "stepSeconds", "maxSteps", "settleSeconds", "retries",
            "remeasures", "maxPublishDelayMs", "growthFactor", "maxRateMBps", "mode", "saturateSeconds", "confirmFraction",
            "maxInFlight");
    static final Set<String> FANOUT_FIELDS = Set.of("connectConcurrency", "connectDeadlineSeconds");

    public static final int HEADER_BYTES = MessageHeader.SIZE;

    public final String file;
    public String name;
    public int topics, partitionsPerTopic, messageSize, randomizedPayloadPoolSize;
    public KeyDistributor keyDistributor;
    public boolean useRandomizedPayloads;
    public double randomBytesRatio;
    public String payloadFile;
    public byte[] payload; // the file's bytes when !useRandomizedPayloads
    public int subscriptionsPerTopic, producersPerTopic, consumerPerSubscription;
    public long producerRate;
    public long consumerBacklogSizeGB;
    public double backlogDrainRatio;
    public int testDurationMinutes, warmupDurationMinutes;
    // extension
    public long testDurationSeconds, warmupDurationSeconds;
    public int catchUpSubscriptions;
    public double catchUpStartBacklogGB;
    public long backlogBytes; // effective consumer backlog target in bytes (0 = off)
    public double discoveryInitialRate = 1000, discoveryGrowthFactor = 2.0;
    /** the search's ceiling in MB/s (10^6 bytes) of payload, all producers; infinite: none */
    public double discoveryMaxRateMBps = Double.POSITIVE_INFINITY;

    /** the search's ceiling in msg/s (infinite: none) */
    public double discoveryCeilingRate() {
        return ceilingRate(discoveryMaxRateMBps, messageSize);
    }

    /** a ceiling of maxRateMBps (10^6 bytes of payload a second; infinite: none) in msg/s of messageSize bytes */
    public static double ceilingRate(double maxRateMBps, int messageSize) {
        return Double.isInfinite(maxRateMBps) ? Double.POSITIVE_INFINITY : Math.max(1, Math.floor(maxRateMBps * 1e6 / messageSize));
    }
    public int discoveryStepSeconds = 5, discoveryMaxSteps = 24, discoverySettleSeconds = 1, discoveryRetries = 1, discoveryRemeasures = 2;
    public double discoveryMaxPublishDelayMs = 200;
    /**
     * How a max-rate run finds its rate: "ladder", a search over steps judged pass / fail ({@link RateSearch}); or
     * "saturate", one phase of {@link #discoverySaturateSeconds} with the producers unthrottled (up to the ceiling)
     * behind a bound on their sends in flight, whose acknowledged and consumed rate is the capacity
     * ({@link Saturation}), then the measured phase at {@link #discoveryConfirmFraction} of it, judged as a ladder's is.
     */
    public String discoveryMode = "ladder";
    public int discoverySaturateSeconds = 10;
    public double discoveryConfirmFraction = 0.9;
    /** the bound on sends in flight while saturating, all producers (0: {@link Saturation#defaultMaxInFlight}) */
    public long discoveryMaxInFlight = 0;

    public boolean saturate() { return "saturate".equals(discoveryMode); }
    /** x-streambench.fanOut: consumers connected concurrently (0 = not a fan-out workload), see FanOut */
    public int fanOutConcurrency;
    public long fanOutDeadlineSeconds;
    public ObjectNode echo;

    private Workload(String file) { this.file = file; }

    public static Workload load(String file) {
        ObjectNode root = Fields.readYamlObject(file);
        Fields f = new Fields(file, root, "");
        f.rejectUnknown(FIELDS);
        Workload w = new Workload(file);
        w.name = f.string("name", null);
        w.topics = (int) f.integer("topics", 0, 0, 1_000_000);
        w.partitionsPerTopic = (int) f.integer("partitionsPerTopic", 0, 0, 1_000_000);
        String kd = f.string("keyDistributor", "NO_KEY");
        try {
            w.keyDistributor = KeyDistributor.valueOf(kd);
        } catch (IllegalArgumentException e) {
            throw f.error("keyDistributor", "unknown value \"" + kd + "\"; expected NO_KEY, KEY_ROUND_ROBIN or RANDOM_NANO");
        }
        w.messageSize = (int) f.integer("messageSize", 0, 0, 100 * 1024 * 1024);
        w.useRandomizedPayloads = f.bool("useRandomizedPayloads", false);
        w.randomBytesRatio = f.number("randomBytesRatio", 0.0, 0.0, 1.0);
        w.randomizedPayloadPoolSize = (int) f.integer("randomizedPayloadPoolSize", 0, 0, 1_000_000);
        w.payloadFile = f.string("payloadFile", null);
        w.subscriptionsPerTopic = (int) f.integer("subscriptionsPerTopic", 0, 0, 100_000);
        w.producersPerTopic = (int) f.integer("producersPerTopic", 0, 0, 100_000);
        w.consumerPerSubscription = (int) f.integer("consumerPerSubscription", 0, 0, 100_000);
        w.producerRate = f.integer("producerRate", 0, 0, Integer.MAX_VALUE);
        w.consumerBacklogSizeGB = f.integer("consumerBacklogSizeGB", 0, 0, Long.MAX_VALUE / (1L << 30));
        w.backlogDrainRatio = f.number("backlogDrainRatio", 1.0, 0.0, 1.0);
        w.testDurationMinutes = (int) f.integer("testDurationMinutes", 0, Integer.MIN_VALUE, Integer.MAX_VALUE);
        w.warmupDurationMinutes = (int) f.integer("warmupDurationMinutes", 1, 0, 100_000);

        Fields x = f.object("x-streambench");
        x.rejectUnknown(EXT_FIELDS);
        w.testDurationSeconds = x.integer("testDurationSeconds", -1, 1, 100L * 24 * 3600);
        w.warmupDurationSeconds = x.integer("warmupDurationSeconds", -1, 0, 100L * 24 * 3600);
        w.catchUpSubscriptions = (int) x.integer("catchUpSubscriptions", 0, 0, 1000);
        w.catchUpStartBacklogGB = x.number("catchUpStartBacklogGB", 0.0, 0.0, 1e9);
        long backlogBytesExt = x.integer("consumerBacklogSizeBytes", -1, 1, Long.MAX_VALUE);
        Fields rd = x.object("rateDiscovery");
        rd.rejectUnknown(DISCOVERY_FIELDS);
        w.discoveryInitialRate = rd.number("initialRate", 1000, 1, 1e9);
        w.discoveryStepSeconds = (int) rd.integer("stepSeconds", 5, 2, 3600);
        w.discoveryMaxSteps = (int) rd.integer("maxSteps", 24, 2, 10_000);
        w.discoverySettleSeconds = (int) rd.integer("settleSeconds", 1, 0, 3600);
        w.discoveryRetries = (int) rd.integer("retries", 1, 0, 10);
        w.discoveryRemeasures = (int) rd.integer("remeasures", 2, 0, 5);
        w.discoveryMaxPublishDelayMs = rd.number("maxPublishDelayMs", 200, 1, 600_000);
        w.discoveryGrowthFactor = rd.number("growthFactor", 2.0, 1.1, 16);
        w.discoveryMaxRateMBps = rd.number("maxRateMBps", Double.POSITIVE_INFINITY, 0.001, Double.MAX_VALUE);
        w.discoveryMode = rd.string("mode", "ladder");
        if (!w.discoveryMode.equals("ladder") && !w.discoveryMode.equals("saturate"))
            throw rd.error("mode", "expected ladder or saturate, got " + w.discoveryMode);
        w.discoverySaturateSeconds = (int) rd.integer("saturateSeconds", 10, 3, 3600);
        w.discoveryConfirmFraction = rd.number("confirmFraction", 0.9, 0.3, 1.0);
        w.discoveryMaxInFlight = rd.integer("maxInFlight", 0, 0, 100_000_000);
        if (w.saturate() && w.discoverySaturateSeconds - w.discoverySettleSeconds < 2)
            throw rd.error("settleSeconds", "leaves " + (w.discoverySaturateSeconds - w.discoverySettleSeconds)
                    + " s of the " + w.discoverySaturateSeconds + "-s saturation phase to judge; at least 2 s are needed");
        if (w.discoveryStepSeconds - w.discoverySettleSeconds < 2)
            throw rd.error("settleSeconds", "leaves " + (w.discoveryStepSeconds - w.discoverySettleSeconds)
                    + " s of a " + w.discoveryStepSeconds + "-s step to judge; at least 2 s are needed");
        if (root.path("x-streambench").has("fanOut")) {
            Fields fo = x.object("fanOut");
            fo.rejectUnknown(FANOUT_FIELDS);
            w.fanOutConcurrency = (int) fo.integer("connectConcurrency", 100, 1, 100_000);
            w.fanOutDeadlineSeconds = fo.integer("connectDeadlineSeconds", 600, 1, 7 * 24 * 3600);
        }

        // ---- combinations (OMB would accept these and fail later, or silently misbehave) ----
        if (w.topics < 1) throw f.error("topics", "must be >= 1 (got " + w.topics + ")");
        if (w.partitionsPerTopic < 1) throw f.error("partitionsPerTopic", "must be >= 1 (got " + w.partitionsPerTopic + ")");
        if (w.producersPerTopic < 1) throw f.error("producersPerTopic", "must be >= 1 (got " + w.producersPerTopic + ")");
        if (w.messageSize < HEADER_BYTES)
            throw f.error("messageSize", "must be >= " + HEADER_BYTES + " bytes (each message carries a "
                    + HEADER_BYTES + "-byte audit header), got " + w.messageSize);
        if (w.consumerPerSubscription > 0 && w.subscriptionsPerTopic == 0)
            throw f.error("consumerPerSubscription", "is " + w.consumerPerSubscription + " but subscriptionsPerTopic is 0 (consumers without subscriptions)");
        if (w.subscriptionsPerTopic > 0 && w.consumerPerSubscription == 0)
            throw f.error("subscriptionsPerTopic", "is " + w.subscriptionsPerTopic + " but consumerPerSubscription is 0 (subscriptions without consumers never drain)");
        if (w.useRandomizedPayloads) {
            if (w.randomizedPayloadPoolSize < 1)
                throw f.error("randomizedPayloadPoolSize", "must be >= 1 when useRandomizedPayloads is true");
        } else {
            if (w.payloadFile == null)
                throw f.error("payloadFile", "missing (required unless useRandomizedPayloads is true)");
            Path p = Path.of(w.payloadFile);
            if (!Files.isRegularFile(p))
                throw f.error("payloadFile", "file not found: " + p.toAbsolutePath() + " (resolved against the current directory, as OMB)");
            try {
                w.payload = Files.readAllBytes(p);
            } catch (IOException e) {
                throw f.error("payloadFile", "cannot read " + p + ": " + e.getMessage());
            }
            if (w.payload.length != w.messageSize)
                throw f.error("messageSize", "is " + w.messageSize + " but payloadFile " + w.payloadFile + " has " + w.payload.length + " bytes");
        }
        if (w.testDurationSeconds < 0 && w.testDurationMinutes <= 0)
            throw f.error("testDurationMinutes", "must be >= 1 (got " + w.testDurationMinutes
                    + "); OMB's 'run forever' is not supported because a run must end to write its result");
        w.backlogBytes = backlogBytesExt > 0 ? backlogBytesExt : w.consumerBacklogSizeGB * (1L << 30);
        if (w.backlogBytes > 0 && w.subscriptionsPerTopic == 0)
            throw f.error(backlogBytesExt > 0 ? "x-streambench.consumerBacklogSizeBytes" : "consumerBacklogSizeGB",
                    "a backlog needs subscriptions, but subscriptionsPerTopic is 0");
        if (w.backlogBytes > 0 && w.producerRate == 0)
            throw f.error("consumerBacklogSizeGB", "cannot be combined with producerRate 0 (rate discovery needs consumers that keep up)");
        if (w.backlogBytes > 0 && w.backlogBytes < w.messageSize)
            throw f.error("consumerBacklogSizeGB", "backlog target smaller than one message");
        if (w.catchUpSubscriptions > 0 || w.catchUpStartBacklogGB > 0) {
            if (w.catchUpSubscriptions < 1)
                throw x.error("catchUpSubscriptions", "must be >= 1 when catchUpStartBacklogGB is set");
            if (w.catchUpStartBacklogGB <= 0)
                throw x.error("catchUpStartBacklogGB", "must be > 0 when catchUpSubscriptions is set");
            if (w.consumerPerSubscription < 1)
                throw f.error("consumerPerSubscription", "a mixed workload needs consumers (>= 1)");
            if (w.backlogBytes > 0)
                throw x.error("catchUpSubscriptions", "a mixed workload cannot be combined with consumerBacklogSizeGB > 0");
            if (w.producerRate == 0)
                throw x.error("catchUpSubscriptions", "a mixed workload cannot be combined with producerRate 0");
        }
        // echo with defaults
        ObjectNode e = Fields.JSON.createObjectNode();
        e.put("name", w.name);
        e.put("topics", w.topics);
        e.put("partitionsPerTopic", w.partitionsPerTopic);
        e.put("keyDistributor", w.keyDistributor.name());
        e.put("messageSize", w.messageSize);
        e.put("useRandomizedPayloads", w.useRandomizedPayloads);
        e.put("randomBytesRatio", w.randomBytesRatio);
        e.put("randomizedPayloadPoolSize", w.randomizedPayloadPoolSize);
        e.put("payloadFile", w.payloadFile);
        e.put("subscriptionsPerTopic", w.subscriptionsPerTopic);
        e.put("producersPerTopic", w.producersPerTopic);
        e.put("consumerPerSubscription", w.consumerPerSubscription);
        e.put("producerRate", w.producerRate);
        e.put("consumerBacklogSizeGB", w.consumerBacklogSizeGB);
        e.put("backlogDrainRatio", w.backlogDrainRatio);
        e.put("testDurationMinutes", w.testDurationMinutes);
        e.put("warmupDurationMinutes", w.warmupDurationMinutes);
        if (root.has("x-streambench")) e.set("x-streambench", root.get("x-streambench"));
        w.echo = e;
        return w;
    }

    public long testSeconds() { return testDurationSeconds > 0 ? testDurationSeconds : testDurationMinutes * 60L; }

    public long warmupSeconds() { return warmupDurationSeconds >= 0 ? warmupDurationSeconds : warmupDurationMinutes * 60L; }

    public boolean mixed() { return catchUpSubscriptions > 0; }

    /**
     * The runner's own deadline when none is given on the command line: generous bounds on every phase (set-up,
     * warm-up, each discovery step with its retries and each measured phase run again lower, backlog build and drain, the measured phase, the drain wait and
     * the clean-up). workloads/run.py passes a tighter one derived from its plan.
     */
    public long defaultDeadlineSeconds() {
        long s = 300 + warmupSeconds() + testSeconds() + 60 + 120 + 120;
        if (producerRate == 0) {
            s += saturate() ? discoverySaturateSeconds : (long) discoveryMaxSteps * discoveryStepSeconds * (1 + discoveryRetries);
            s += (long) discoveryRemeasures * (testSeconds() + Runner.maxRecoverSeconds(this));
        }
        if (fanOut()) s += 2 * fanOutDeadlineSeconds; // connecting the consumers, and closing them
        if (backlogBytes > 0) {
            long build = producerRate > 0 ? (long) Math.ceil(backlogBytes / ((double) producerRate * messageSize)) : 3600;
            s += build + Math.max(600, 10 * build);
        }
        return s;
    }

    public boolean fanOut() { return fanOutConcurrency > 0; }

    public int totalProducers() { return topics * producersPerTopic; }
}
