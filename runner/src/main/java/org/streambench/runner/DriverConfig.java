package org.streambench.runner;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.TopicConfig;

import java.io.IOException;
import java.io.StringReader;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;

/** An OMB driver file (Kafka, Pulsar or Pravega), validated strictly. */
public final class DriverConfig {
    public enum Type { KAFKA, PULSAR, PRAVEGA }

    public static final Set<String> KAFKA_CLASSES = Set.of(
            "io.openmessaging.benchmark.driver.kafka.KafkaBenchmarkDriver");
    public static final Set<String> PULSAR_CLASSES = Set.of(
            "io.openmessaging.benchmark.driver.pulsar.PulsarBenchmarkDriver");
    public static final Set<String> PRAVEGA_CLASSES = Set.of(
            "io.openmessaging.benchmark.driver.pravega.PravegaBenchmarkDriver");

    static final Set<String> KAFKA_FIELDS = Set.of("name", "driverClass", "replicationFactor", "reset",
            "topicConfig", "commonConfig", "producerConfig", "consumerConfig");
    static final Set<String> PULSAR_FIELDS = Set.of("name", "driverClass", "client", "producer", "consumer");
    static final Set<String> PULSAR_CLIENT = Set.of("serviceUrl", "httpUrl", "clientMemoryLimitMB", "ioThreads",
            "connectionsPerBroker", "maxConcurrentLookupRequests", "namespacePrefix", "clusterName", "topicType",
            "persistence", "tlsAllowInsecureConnection", "tlsEnableHostnameVerification", "tlsTrustCertsFilePath",
            "authentication");
    static final Set<String> PULSAR_PERSISTENCE = Set.of("ensembleSize", "writeQuorum", "ackQuorum", "deduplicationEnabled");
    static final Set<String> PULSAR_AUTH = Set.of("plugin", "data");
    static final Set<String> PULSAR_PRODUCER = Set.of("batchingEnabled", "batchingMaxPublishDelayMs", "batchingMaxBytes",
            "blockIfQueueFull", "pendingQueueSize",
            // accepted for the studies' older YAMLs (OMB ignores them silently; this runner applies them)
            "maxPendingMessagesAcrossPartitions", "batchingPartitionSwitchFrequencyByPublishDelay");
    // OMB's PravegaConfig, PravegaClientConfig, PravegaWriterConfig; eventPerTransaction is the spelling of OMB's own
    // pravega-exactly-once.yaml (OMB ignores it as an unknown field; here it is an alias of eventsPerTransaction)
    static final Set<String> PRAVEGA_FIELDS = Set.of("name", "driverClass", "client", "writer", "includeTimestampInEvent",
            "enableTransaction", "eventsPerTransaction", "eventPerTransaction", "enableStreamAutoScaling", "eventsPerSecond",
            "kbytesPerSecond", "createScope", "deleteStreams");
    static final Set<String> PRAVEGA_CLIENT = Set.of("controllerURI", "scopeName");
    static final Set<String> PRAVEGA_WRITER = Set.of("enableConnectionPooling");
    /** Pravega's rule for user scope, stream and reader-group names (NameUtils) */
    static final java.util.regex.Pattern PRAVEGA_NAME = java.util.regex.Pattern.compile("[A-Za-z0-9.-]+");
    static final Set<String> PULSAR_CONSUMER = Set.of("receiverQueueSize", "subscriptionType",
            "maxTotalReceiverQueueSizeAcrossPartitions");

    public final String file;
    public Type type;
    public String name, driverClass;
    public ObjectNode echo;

    // Kafka
    public short replicationFactor;
    public Properties topicConfig = new Properties(), commonConfig = new Properties(),
            producerConfig = new Properties(), consumerConfig = new Properties();

    // Pulsar
    public String serviceUrl, httpUrl, namespacePrefix, clusterName, topicType, tlsTrustCertsFilePath, authPlugin, authData;
    public long clientMemoryLimitMB;
    public int ioThreads, connectionsPerBroker, maxConcurrentLookupRequests;
    public int ensembleSize, writeQuorum, ackQuorum;
    public boolean deduplicationEnabled, tlsAllowInsecureConnection, tlsEnableHostnameVerification;
    public boolean batchingEnabled, blockIfQueueFull;
    public int batchingMaxPublishDelayMs, batchingMaxBytes, pendingQueueSize, maxPendingMessagesAcrossPartitions = -1;
    public int batchingPartitionSwitchFrequencyByPublishDelay = -1;
    public int receiverQueueSize, maxTotalReceiverQueueSizeAcrossPartitions = -1;
    public String subscriptionType;

    // Pravega
    public String controllerURI, scopeName;
    public boolean enableConnectionPooling, includeTimestampInEvent = true, enableTransaction, enableStreamAutoScaling;
    public boolean createScope = true, deleteStreams = true;
    public int eventsPerTransaction = 1, eventsPerSecond = -1, kbytesPerSecond = -1;

    private DriverConfig(String file) { this.file = file; }

    public static DriverConfig load(String file) {
        ObjectNode root = Fields.readYamlObject(file);
        Fields f = new Fields(file, root, "");
        DriverConfig d = new DriverConfig(file);
        d.driverClass = f.string("driverClass", null);
        if (d.driverClass == null) throw f.error("driverClass", "missing (expected "
                + String.join(" or ", KAFKA_CLASSES) + " or " + String.join(" or ", PULSAR_CLASSES)
                + " or " + String.join(" or ", PRAVEGA_CLASSES) + ")");
        if (KAFKA_CLASSES.contains(d.driverClass)) d.type = Type.KAFKA;
        else if (PULSAR_CLASSES.contains(d.driverClass)) d.type = Type.PULSAR;
        else if (PRAVEGA_CLASSES.contains(d.driverClass)) d.type = Type.PRAVEGA;
        else throw f.error("driverClass", "unsupported driver \"" + d.driverClass + "\"; supported: "
                    + String.join(", ", KAFKA_CLASSES) + ", " + String.join(", ", PULSAR_CLASSES)
                    + ", " + String.join(", ", PRAVEGA_CLASSES));
        d.name = f.string("name", null);
        if (d.name == null) throw f.error("name", "missing");
        if (d.type == Type.KAFKA) d.loadKafka(f);
        else if (d.type == Type.PULSAR) d.loadPulsar(f);
        else d.loadPravega(f);
        d.echo = root.deepCopy();
        d.echo.put("driverType", d.type.name().toLowerCase());
        return d;
    }

    private void loadKafka(Fields f) {
        f.rejectUnknown(KAFKA_FIELDS);
        replicationFactor = (short) f.integer("replicationFactor", 1, 1, Short.MAX_VALUE);
        f.bool("reset", false); // removed upstream (#300); accepted and ignored
        Set<String> producer = ProducerConfig.configNames();
        Set<String> consumer = ConsumerConfig.configNames();
        Set<String> common = new HashSet<>(producer);
        common.addAll(consumer);
        common.addAll(AdminClientConfig.configNames());
        topicConfig = props(f, "topicConfig", topicConfigNames());
        commonConfig = props(f, "commonConfig", common);
        producerConfig = props(f, "producerConfig", producer);
        consumerConfig = props(f, "consumerConfig", consumer);
        String zone = System.getProperty("zone.id");
        for (Properties p : new Properties[]{commonConfig, producerConfig, consumerConfig}) {
            String cid = p.getProperty("client.id");
            if (cid != null && cid.contains("{zone.id}")) {
                if (zone == null) throw f.error("client.id", "contains {zone.id} but -Dzone.id is not set");
                p.setProperty("client.id", cid.replace("{zone.id}", zone));
            }
        }
        serviceUrl = null;
    }

    static Set<String> topicConfigNames() {
        Set<String> s = new HashSet<>();
        for (Field fl : TopicConfig.class.getFields()) {
            if (Modifier.isStatic(fl.getModifiers()) && fl.getType() == String.class && fl.getName().endsWith("_CONFIG")) {
                try {
                    s.add((String) fl.get(null));
                } catch (IllegalAccessException ignored) {
                }
            }
        }
        return s;
    }

    private static Properties props(Fields f, String key, Set<String> known) {
        Properties p = new Properties();
        String text = f.string(key, null);
        if (text == null) return p;
        try {
            p.load(new StringReader(text));
        } catch (IOException | IllegalArgumentException e) {
            throw f.error(key, "not a Java properties block: " + e.getMessage());
        }
        for (String k : p.stringPropertyNames()) {
            if (!known.contains(k)) {
                String hint = Fields.closest(k, known);
                throw f.error(key + "." + k, "unknown Kafka " + key + " property" + (hint == null ? "" : " (did you mean '" + hint + "'?)"));
            }
        }
        return p;
    }

    private void loadPulsar(Fields f) {
        f.rejectUnknown(PULSAR_FIELDS);
        Fields c = f.object("client");
        c.rejectUnknown(PULSAR_CLIENT);
        serviceUrl = c.string("serviceUrl", null);
        httpUrl = c.string("httpUrl", null);
        clientMemoryLimitMB = c.integer("clientMemoryLimitMB", 256, 0, 1 << 20);
        ioThreads = (int) c.integer("ioThreads", 8, 1, 1024);
        connectionsPerBroker = (int) c.integer("connectionsPerBroker", 8, 1, 1024);
        maxConcurrentLookupRequests = (int) c.integer("maxConcurrentLookupRequests", 1000, 1, Integer.MAX_VALUE);
        namespacePrefix = c.string("namespacePrefix", "benchmark/ns");
        if (namespacePrefix.split("/").length != 2 || namespacePrefix.startsWith("/") || namespacePrefix.endsWith("/"))
            throw c.error("namespacePrefix", "expected \"tenant/namespace\", got \"" + namespacePrefix + "\"");
        clusterName = c.string("clusterName", null);
        topicType = c.string("topicType", "persistent");
        if (!topicType.equals("persistent") && !topicType.equals("non-persistent"))
            throw c.error("topicType", "expected persistent or non-persistent, got \"" + topicType + "\"");
        Fields pe = c.object("persistence");
        pe.rejectUnknown(PULSAR_PERSISTENCE);
        ensembleSize = (int) pe.integer("ensembleSize", 3, 1, 100);
        writeQuorum = (int) pe.integer("writeQuorum", 3, 1, 100);
        ackQuorum = (int) pe.integer("ackQuorum", 2, 1, 100);
        deduplicationEnabled = pe.bool("deduplicationEnabled", false);
        if (writeQuorum > ensembleSize)
            throw pe.error("writeQuorum", "must be <= ensembleSize (" + writeQuorum + " > " + ensembleSize + ")");
        if (ackQuorum > writeQuorum)
            throw pe.error("ackQuorum", "must be <= writeQuorum (" + ackQuorum + " > " + writeQuorum + ")");
        tlsAllowInsecureConnection = c.bool("tlsAllowInsecureConnection", false);
        tlsEnableHostnameVerification = c.bool("tlsEnableHostnameVerification", false);
        tlsTrustCertsFilePath = c.string("tlsTrustCertsFilePath", null);
        Fields au = c.object("authentication");
        au.rejectUnknown(PULSAR_AUTH);
        authPlugin = au.string("plugin", null);
        authData = au.string("data", null);
        if (authPlugin != null && !authPlugin.isEmpty())
            throw au.error("plugin", "authentication is not supported by this runner");

        Fields p = f.object("producer");
        p.rejectUnknown(PULSAR_PRODUCER);
        batchingEnabled = p.bool("batchingEnabled", true);
        batchingMaxPublishDelayMs = (int) p.integer("batchingMaxPublishDelayMs", 1, 0, 3_600_000);
        batchingMaxBytes = (int) p.integer("batchingMaxBytes", 1024 * 1024, 1, Integer.MAX_VALUE);
        blockIfQueueFull = p.bool("blockIfQueueFull", true);
        pendingQueueSize = (int) p.integer("pendingQueueSize", 0, 0, Integer.MAX_VALUE);
        maxPendingMessagesAcrossPartitions = (int) p.integer("maxPendingMessagesAcrossPartitions", -1, 0, Integer.MAX_VALUE);
        batchingPartitionSwitchFrequencyByPublishDelay = (int) p.integer("batchingPartitionSwitchFrequencyByPublishDelay", -1, 1, Integer.MAX_VALUE);

        Fields co = f.object("consumer");
        co.rejectUnknown(PULSAR_CONSUMER);
        receiverQueueSize = (int) co.integer("receiverQueueSize", 10000, 0, Integer.MAX_VALUE);
        maxTotalReceiverQueueSizeAcrossPartitions = (int) co.integer("maxTotalReceiverQueueSizeAcrossPartitions", -1, 0, Integer.MAX_VALUE);
        subscriptionType = co.string("subscriptionType", "Failover");
        if (!Set.of("Exclusive", "Shared", "Failover", "Key_Shared").contains(subscriptionType))
            throw co.error("subscriptionType", "expected Exclusive, Shared, Failover or Key_Shared, got \"" + subscriptionType + "\"");
    }

    private void loadPravega(Fields f) {
        f.rejectUnknown(PRAVEGA_FIELDS);
        Fields c = f.object("client");
        c.rejectUnknown(PRAVEGA_CLIENT);
        controllerURI = c.string("controllerURI", null);
        if (controllerURI != null) checkControllerURI(c, "controllerURI", controllerURI);
        scopeName = c.string("scopeName", null);
        if (scopeName == null) throw c.error("scopeName", "missing (the Pravega scope the benchmark's streams go to)");
        if (!PRAVEGA_NAME.matcher(scopeName).matches())
            throw c.error("scopeName", "\"" + scopeName + "\" is not a Pravega scope name (letters, digits, '.' and '-')");
        Fields wr = f.object("writer");
        wr.rejectUnknown(PRAVEGA_WRITER);
        enableConnectionPooling = wr.bool("enableConnectionPooling", false);
        includeTimestampInEvent = f.bool("includeTimestampInEvent", true);
        enableTransaction = f.bool("enableTransaction", false);
        if (f.has("eventsPerTransaction") && f.has("eventPerTransaction"))
            throw f.error("eventPerTransaction", "given together with eventsPerTransaction (it is an alias of it); keep one");
        String ept = f.has("eventPerTransaction") ? "eventPerTransaction" : "eventsPerTransaction";
        eventsPerTransaction = (int) f.integer(ept, 1, 1, Integer.MAX_VALUE);
        if (f.has(ept) && !enableTransaction && eventsPerTransaction != 1)
            throw f.error(ept, "applies only with enableTransaction: true");
        enableStreamAutoScaling = f.bool("enableStreamAutoScaling", false);
        eventsPerSecond = (int) f.integer("eventsPerSecond", -1, -1, Integer.MAX_VALUE);
        kbytesPerSecond = (int) f.integer("kbytesPerSecond", -1, -1, Integer.MAX_VALUE);
        if (eventsPerSecond == 0) throw f.error("eventsPerSecond", "must be >= 1 (or -1: not set)");
        if (kbytesPerSecond == 0) throw f.error("kbytesPerSecond", "must be >= 1 (or -1: not set)");
        // OMB silently falls back to a fixed policy here; an experiment that asked for auto-scaling should know
        if (enableStreamAutoScaling && eventsPerSecond < 0 && kbytesPerSecond < 0)
            throw f.error("enableStreamAutoScaling", "true needs eventsPerSecond or kbytesPerSecond (the rate per segment that splits it)");
        createScope = f.bool("createScope", true);
        deleteStreams = f.bool("deleteStreams", true);
    }

    /** tcp://host:port or tls://host:port (several comma-separated host:port allowed, as the Pravega client takes them) */
    static void checkControllerURI(Fields f, String key, String uri) {
        if (!uri.matches("(tcp|tls|pravega|pravegas)://[^\\s/,]+:\\d+(,[^\\s/,]+:\\d+)*/?"))
            throw f.error(key, "expected tcp://HOST:PORT (or tls://), got \"" + uri + "\"");
    }

    /**
     * Checks combinations of driver and workload that cannot work (ConfigException), and returns warnings for those
     * that run differently from what the workload's numbers suggest.
     */
    public List<String> checkAgainst(Workload w) {
        List<String> warnings = new ArrayList<>();
        if (type == Type.PRAVEGA && w.consumerPerSubscription > w.partitionsPerTopic)
            // upstream OMB runs this shape: a reader group gives each segment to one reader, the others stay idle (as
            // Kafka's consumers without a partition do); run it too, and say so in the result
            warnings.add(w.consumerPerSubscription + " readers share each reader group (consumerPerSubscription) of "
                    + w.partitionsPerTopic + " segment(s): a reader group gives each segment to one reader, so "
                    + (w.consumerPerSubscription - w.partitionsPerTopic) + " reader(s) per group receive nothing and stay idle"
                    + " (Pravega has no shared subscription; workload " + w.file + ", driver " + file + ")");
        if (type == Type.PULSAR && subscriptionType.equals("Exclusive") && w.consumerPerSubscription > 1)
            throw new ConfigException(file, "consumer.subscriptionType",
                    "Exclusive allows one consumer per subscription, but the workload " + w.file + " has consumerPerSubscription " + w.consumerPerSubscription);
        return warnings;
    }
}
