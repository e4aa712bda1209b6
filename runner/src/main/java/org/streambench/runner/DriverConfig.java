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
import java.util.HashSet;
import java.util.Properties;
import java.util.Set;

/** An OMB driver file (Kafka or Pulsar), validated strictly. */
public final class DriverConfig {
    public enum Type { KAFKA, PULSAR }

    public static final Set<String> KAFKA_CLASSES = Set.of(
            "io.openmessaging.benchmark.driver.kafka.KafkaBenchmarkDriver");
    public static final Set<String> PULSAR_CLASSES = Set.of(
            "io.openmessaging.benchmark.driver.pulsar.PulsarBenchmarkDriver");

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

    private DriverConfig(String file) { this.file = file; }

    public static DriverConfig load(String file) {
        ObjectNode root = Fields.readYamlObject(file);
        Fields f = new Fields(file, root, "");
        DriverConfig d = new DriverConfig(file);
        d.driverClass = f.string("driverClass", null);
        if (d.driverClass == null) throw f.error("driverClass", "missing (expected "
                + String.join(" or ", KAFKA_CLASSES) + " or " + String.join(" or ", PULSAR_CLASSES) + ")");
        if (KAFKA_CLASSES.contains(d.driverClass)) d.type = Type.KAFKA;
        else if (PULSAR_CLASSES.contains(d.driverClass)) d.type = Type.PULSAR;
        else throw f.error("driverClass", "unsupported driver \"" + d.driverClass + "\"; supported: "
                    + String.join(", ", KAFKA_CLASSES) + ", " + String.join(", ", PULSAR_CLASSES));
        d.name = f.string("name", null);
        if (d.name == null) throw f.error("name", "missing");
        if (d.type == Type.KAFKA) d.loadKafka(f); else d.loadPulsar(f);
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

    /** Checks combinations of driver and workload that cannot work. */
    public void checkAgainst(Workload w) {
        if (type == Type.PULSAR && subscriptionType.equals("Exclusive") && w.consumerPerSubscription > 1)
            throw new ConfigException(file, "consumer.subscriptionType",
                    "Exclusive allows one consumer per subscription, but the workload " + w.file + " has consumerPerSubscription " + w.consumerPerSubscription);
    }
}
