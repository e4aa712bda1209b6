package org.streambench.runner.bench;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The baseline of runner/bench/fanout.py: a plain client loop of the same library opening the same consumers
 * (N subscriptions x 1 consumer of one existing topic, at most C connects in flight), without the runner.
 * Prints "connected N in S s" (first connect start to last consumer connected). The topic is created first (the
 * clusters here do not create topics on demand; not timed): Pulsar through the admin REST API at ADMIN_URL, Kafka with
 * 1 partition and replication factor 3. Any failed connect ends the process with status 1 and the first error.
 *
 *   java -cp omb-runner.jar:lib/* org.streambench.runner.bench.PlainConnect pulsar SERVICE_URL TOPIC N C ADMIN_URL
 *   java -cp ... PlainConnect kafka BOOTSTRAP TOPIC N C
 */
public final class PlainConnect {
    public static void main(String[] a) {
        try {
            run(a);
        } catch (Throwable e) {
            // the clients' threads are not daemons: without an explicit exit a failed connect would leave the JVM up
            System.err.println("PlainConnect: " + e);
            e.printStackTrace();
            System.exit(1);
        }
    }

    private static void createTopic(String system, String url, String topic, String adminUrl) throws Exception {
        if (system.equals("pulsar")) {
            String path = adminUrl.replaceAll("/+$", "") + "/admin/v2/persistent/" + topic.replaceFirst("^persistent://", "");
            HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(path))
                    .timeout(Duration.ofSeconds(60)).PUT(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() >= 300 && r.statusCode() != 409)
                throw new IllegalStateException("create topic " + path + ": HTTP " + r.statusCode() + " " + r.body());
        } else {
            Properties p = new Properties();
            p.setProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, url);
            try (Admin admin = Admin.create(p)) {
                try {
                    admin.createTopics(List.of(new NewTopic(topic, 1, (short) 3))).all().get(120, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) throw e;
                }
            }
        }
    }

    private static void run(String[] a) throws Exception {
        String system = a[0], url = a[1], topic = a[2];
        int n = Integer.parseInt(a[3]), c = Integer.parseInt(a[4]);
        if (system.equals("pulsar") && a.length < 6) throw new IllegalArgumentException("pulsar needs ADMIN_URL (6th argument)");
        createTopic(system, url, topic, a.length > 5 ? a[5] : null);
        String prefix = "plain-" + Long.toString(System.currentTimeMillis(), 36) + "-";
        Semaphore inFlight = new Semaphore(c);
        List<AutoCloseable> open = new ArrayList<>();
        long t0 = System.nanoTime();
        final long[] last = {t0};
        List<CompletableFuture<?>> all = new ArrayList<>();
        PulsarClient client = null;
        AtomicBoolean stop = new AtomicBoolean();
        if (system.equals("pulsar")) {
            client = PulsarClient.builder().serviceUrl(url).ioThreads(4).connectionsPerBroker(8)
                    .maxLookupRequests(Integer.MAX_VALUE).listenerThreads(Runtime.getRuntime().availableProcessors())
                    .operationTimeout(10, TimeUnit.MINUTES).statsInterval(0, TimeUnit.SECONDS).build();
            for (int i = 0; i < n; i++) {
                inFlight.acquire();
                CompletableFuture<Consumer<byte[]>> f = client.newConsumer().topic(topic).subscriptionName(prefix + i)
                        .subscriptionType(SubscriptionType.Failover).subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                        .receiverQueueSize(1000).messageListener((cn, m) -> cn.acknowledgeAsync(m)).subscribeAsync();
                all.add(f.whenComplete((cn, e) -> {
                    synchronized (last) { last[0] = Math.max(last[0], System.nanoTime()); if (cn != null) open.add(cn); }
                    inFlight.release();
                }));
            }
        } else {
            for (int i = 0; i < n; i++) {
                inFlight.acquire();
                Properties p = new Properties();
                p.setProperty(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, url);
                p.setProperty(ConsumerConfig.GROUP_ID_CONFIG, prefix + i);
                p.setProperty(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
                p.setProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
                p.setProperty(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
                p.setProperty(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
                KafkaConsumer<byte[], byte[]> kc = new KafkaConsumer<>(p);
                CompletableFuture<Void> joined = new CompletableFuture<>();
                kc.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                    public void onPartitionsRevoked(Collection<TopicPartition> ps) { }
                    public void onPartitionsAssigned(Collection<TopicPartition> ps) { joined.complete(null); }
                });
                Thread t = new Thread(() -> {
                    try { while (!stop.get()) kc.poll(Duration.ofMillis(100)); }
                    catch (Exception ignored) { }
                    finally { kc.close(Duration.ofSeconds(10)); }
                }, "plain-" + i);
                t.setDaemon(true);
                t.start();
                all.add(joined.whenComplete((v, e) -> {
                    synchronized (last) { last[0] = Math.max(last[0], System.nanoTime()); }
                    inFlight.release();
                }));
                open.add(() -> { stop.set(true); t.join(30_000); });
            }
        }
        CompletableFuture.allOf(all.toArray(new CompletableFuture[0])).get(1, TimeUnit.HOURS);
        double s;
        synchronized (last) { s = (last[0] - t0) / 1e9; }
        System.out.printf("connected %d in %.3f s%n", n, s);
        System.out.flush();
        stop.set(true);
        for (AutoCloseable x : open) try { x.close(); } catch (Exception ignored) { }
        if (client != null) client.close();
        System.exit(0);
    }
}
