package org.streambench.runner;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/** Kafka driver: OMB's semantics (one KafkaProducer per producer, group.id = subscription, commitAsync per poll). */
final class KafkaDriver implements Driver {
    private final DriverConfig cfg;
    private final String bootstrap;
    private final Admin admin;
    private final List<AutoCloseable> open = new ArrayList<>();

    KafkaDriver(DriverConfig cfg, String bootstrapOverride) {
        this.cfg = cfg;
        String b = bootstrapOverride;
        if (b == null) b = cfg.producerConfig.getProperty("bootstrap.servers", cfg.commonConfig.getProperty("bootstrap.servers"));
        if (b == null) throw new ConfigException(cfg.file, "commonConfig.bootstrap.servers", "missing, and no --cluster given");
        this.bootstrap = b;
        Properties ap = new Properties();
        for (String k : cfg.commonConfig.stringPropertyNames())
            if (AdminClientConfig.configNames().contains(k)) ap.setProperty(k, cfg.commonConfig.getProperty(k));
        ap.setProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        this.admin = Admin.create(ap);
    }

    @Override
    public ObjectNode endpoints() {
        ObjectNode n = Fields.JSON.createObjectNode();
        n.put("bootstrapServers", bootstrap);
        return n;
    }

    @Override
    public List<String> topicNames(String runId, int topics) {
        List<String> l = new ArrayList<>();
        for (int i = 0; i < topics; i++) l.add(String.format("sb-%s-%04d", runId, i));
        return l;
    }

    @Override
    public void createTopics(List<String> topics, int partitions) throws Exception {
        Map<String, String> tc = new HashMap<>();
        for (String k : cfg.topicConfig.stringPropertyNames()) tc.put(k, cfg.topicConfig.getProperty(k));
        for (int i = 0; i < topics.size(); i += 500) {
            List<NewTopic> batch = new ArrayList<>();
            for (String t : topics.subList(i, Math.min(topics.size(), i + 500)))
                batch.add(new NewTopic(t, partitions, cfg.replicationFactor).configs(tc));
            admin.createTopics(batch).all().get(120, TimeUnit.SECONDS);
        }
        waitForTopics(topics, partitions, 60_000);
    }

    @Override
    public void waitForTopics(List<String> topics, int partitions, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (true) {
            try {
                Map<String, TopicDescription> d = admin.describeTopics(topics).allTopicNames().get(30, TimeUnit.SECONDS);
                boolean ok = true;
                for (TopicDescription td : d.values()) {
                    if (td.partitions().size() != partitions) ok = false;
                    for (var p : td.partitions()) if (p.leader() == null || p.leader().isEmpty()) ok = false;
                }
                if (ok) return;
            } catch (java.util.concurrent.ExecutionException e) {
                // not there yet
            }
            if (System.currentTimeMillis() > deadline)
                throw new IllegalStateException("topics " + topics + " not ready with " + partitions + " partitions after " + timeoutMs + " ms");
            Thread.sleep(200);
        }
    }

    private Properties producerProps() {
        Properties p = new Properties();
        p.putAll(cfg.commonConfig);
        p.putAll(cfg.producerConfig);
        p.setProperty(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.setProperty(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.setProperty(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return p;
    }

    @Override
    public Producer createProducer(String topic) {
        KafkaProducer<String, byte[]> kp = new KafkaProducer<>(producerProps());
        Producer p = new Producer() {
            // KafkaProducer.send serialises (ByteArraySerializer: the same array) and appends the bytes to the
            // record batch before it returns, so the runner can reuse its payload buffer
            @Override
            public boolean copiesPayloadOnSend() { return true; }

            @Override
            public void send(String key, byte[] payload, SendCallback cb) {
                kp.send(new ProducerRecord<>(topic, key, payload), (md, ex) -> cb.done(ex));
            }

            @Override
            public void flush() { kp.flush(); }

            @Override
            public void close() { kp.close(Duration.ofSeconds(30)); }
        };
        synchronized (open) { open.add(p::close); }
        return p;
    }

    @Override
    public Consumer createConsumer(String topic, String subscription, Handler handler) {
        return newConsumer(topic, subscription, handler, null);
    }

    @Override
    public java.util.concurrent.CompletableFuture<Consumer> connectConsumer(String topic, String subscription, Handler handler) {
        var joined = new java.util.concurrent.CompletableFuture<Consumer>();
        try {
            Consumer c = newConsumer(topic, subscription, handler, joined);
            if (joined.isCompletedExceptionally()) return joined;
            return joined.thenApply(x -> c);
        } catch (Exception e) {
            joined.completeExceptionally(e);
            return joined;
        }
    }

    /** joined (may be null) completes at the consumer's first partition assignment: it is in its group. */
    private Consumer newConsumer(String topic, String subscription, Handler handler, java.util.concurrent.CompletableFuture<Consumer> joined) {
        Properties p = new Properties();
        p.putAll(cfg.commonConfig);
        p.putAll(cfg.consumerConfig);
        p.setProperty(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.setProperty(ConsumerConfig.GROUP_ID_CONFIG, subscription);
        p.setProperty(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.setProperty(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        boolean autoCommit = Boolean.parseBoolean(p.getProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "true"));
        KafkaConsumer<String, byte[]> kc = new KafkaConsumer<>(p);
        if (joined == null) kc.subscribe(List.of(topic));
        else kc.subscribe(List.of(topic), new org.apache.kafka.clients.consumer.ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(java.util.Collection<org.apache.kafka.common.TopicPartition> ps) { }

            @Override
            public void onPartitionsAssigned(java.util.Collection<org.apache.kafka.common.TopicPartition> ps) { joined.complete(null); }
        });
        KConsumer c = new KConsumer(kc, handler, autoCommit, "kafka-consumer-" + subscription + "-" + topic);
        if (joined != null) c.onFailure = joined::completeExceptionally;
        synchronized (open) { open.add(c::close); }
        return c;
    }

    private static final class KConsumer extends PollingConsumer {
        final KafkaConsumer<String, byte[]> kc;
        final boolean autoCommit;
        volatile Throwable failure;
        volatile java.util.function.Consumer<Throwable> onFailure;

        KConsumer(KafkaConsumer<String, byte[]> kc, Handler handler, boolean autoCommit, String name) {
            super(name, handler);
            this.kc = kc;
            this.autoCommit = autoCommit;
            start();
        }

        @Override
        protected void loop() {
            try {
                while (!closed) {
                    if (paused) {
                        if (!kc.assignment().isEmpty()) kc.pause(kc.assignment());
                    } else if (!kc.paused().isEmpty()) {
                        kc.resume(kc.paused());
                    }
                    ConsumerRecords<String, byte[]> recs = kc.poll(Duration.ofMillis(100));
                    for (ConsumerRecord<String, byte[]> r : recs) handler.onMessage(r.value(), r.partition());
                    if (!autoCommit && !recs.isEmpty()) kc.commitAsync();
                }
            } catch (WakeupException e) {
                if (!closed) failure = e;
            } catch (Throwable t) {
                failure = t;
                if (onFailure != null) onFailure.accept(t);
                Log.error("Kafka consumer " + Thread.currentThread().getName() + " failed: " + t);
            } finally {
                try {
                    if (!autoCommit) kc.commitSync(Duration.ofSeconds(5));
                } catch (Exception ignored) {
                }
                kc.close(Duration.ofSeconds(10));
            }
        }

        @Override
        protected void wake() { kc.wakeup(); } // the loop's finally commits and closes the consumer
    }

    @Override
    public void waitConsumersReady(Map<String, Integer> expected, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        String last = "";
        while (true) {
            Map<String, ConsumerGroupDescription> d = new HashMap<>();
            var futures = admin.describeConsumerGroups(expected.keySet()).describedGroups();
            for (var e : futures.entrySet()) {
                try {
                    d.put(e.getKey(), e.getValue().get(30, TimeUnit.SECONDS));
                } catch (java.util.concurrent.ExecutionException ex) {
                    // GroupIdNotFound while the consumers are still joining: not ready yet
                }
            }
            boolean ok = true;
            StringBuilder sb = new StringBuilder();
            for (var e : expected.entrySet()) {
                ConsumerGroupDescription g = d.get(e.getKey());
                int members = g == null ? 0 : g.members().size();
                boolean stable = g != null && g.groupState() == GroupState.STABLE;
                boolean assigned = g != null && g.members().stream().mapToInt(m -> m.assignment().topicPartitions().size()).sum() > 0;
                if (members != e.getValue() || !stable || !assigned) ok = false;
                sb.append(e.getKey()).append(": ").append(members).append("/").append(e.getValue())
                        .append(g == null ? "" : " " + g.groupState()).append("; ");
            }
            last = sb.toString();
            if (ok) return;
            if (System.currentTimeMillis() > deadline)
                throw new IllegalStateException("consumers not ready after " + timeoutMs + " ms: " + last);
            Thread.sleep(200);
        }
    }

    @Override
    public void deleteTopics(List<String> topics) throws Exception {
        admin.deleteTopics(topics).all().get(60, TimeUnit.SECONDS);
    }

    @Override
    public void closeClients() {
        Driver.closeAll(open);
    }

    @Override
    public void close() {
        closeClients();
        admin.close(Duration.ofSeconds(10));
    }

}
