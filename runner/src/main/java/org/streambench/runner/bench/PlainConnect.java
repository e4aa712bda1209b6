package org.streambench.runner.bench;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The baseline of runner/bench/connect_rate.py: a plain client loop of the same library opening the same consumers
 * (N subscriptions x 1 consumer of one existing topic, at most C connects in flight), without the runner.
 * Prints "connected N in S s" (first connect start to last consumer connected).
 *
 *   java -cp omb-runner.jar:lib/* org.streambench.runner.bench.PlainConnect pulsar SERVICE_URL TOPIC N C
 *   java -cp ... PlainConnect kafka BOOTSTRAP TOPIC N C
 */
public final class PlainConnect {
    public static void main(String[] a) throws Exception {
        String system = a[0], url = a[1], topic = a[2];
        int n = Integer.parseInt(a[3]), c = Integer.parseInt(a[4]);
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
