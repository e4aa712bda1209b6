package org.streambench.runner.bench;

import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.io.FileReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The baseline of runner/bench/publish_delay_vs_plain.py: a plain open-loop producer loop of kafka-clients with the
 * runner's thread layout (min(producers, cores) threads, each with its share of the rate and its own producers) and
 * schedule (intended = start + k / rate, park until then, send; no catch-up pacing beyond sending back-to-back).
 * It records only the publish delay (send time - intended time) of the measured seconds and prints one JSON line.
 *
 *   java -cp omb-runner.jar:lib/* org.streambench.runner.bench.PlainProducerLoop BOOTSTRAP PRODUCER_PROPS RATE
 *        WARMUP_S SECONDS PRODUCERS PARTITIONS REPLICATION TOPIC_CONFIG_PROPS
 */
public final class PlainProducerLoop {
    public static void main(String[] a) throws Exception {
        String bootstrap = a[0];
        Properties pp = new Properties();
        try (FileReader r = new FileReader(a[1])) { pp.load(r); }
        double rate = Double.parseDouble(a[2]);
        long warmup = Long.parseLong(a[3]), seconds = Long.parseLong(a[4]);
        int producers = Integer.parseInt(a[5]), partitions = Integer.parseInt(a[6]);
        short rf = Short.parseShort(a[7]);
        Properties tcp = new Properties();
        try (FileReader r = new FileReader(a[8])) { tcp.load(r); }
        String topic = "plain-" + Long.toString(System.currentTimeMillis(), 36);
        Properties ap = new Properties();
        ap.setProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            Map<String, String> tc = new java.util.HashMap<>();
            for (String k : tcp.stringPropertyNames()) tc.put(k, tcp.getProperty(k));
            admin.createTopics(List.of(new NewTopic(topic, partitions, rf).configs(tc))).all().get(60, TimeUnit.SECONDS);
            Thread.sleep(2000);
            List<KafkaProducer<String, byte[]>> ps = new ArrayList<>();
            for (int i = 0; i < producers; i++) {
                Properties p = new Properties();
                p.putAll(pp);
                p.setProperty(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                p.setProperty(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
                p.setProperty(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
                ps.add(new KafkaProducer<>(p));
            }
            int threads = Math.max(1, Math.min(producers, Runtime.getRuntime().availableProcessors()));
            long start = System.nanoTime() + 500_000_000L;
            long measureFrom = start + warmup * 1_000_000_000L, measureTo = measureFrom + seconds * 1_000_000_000L;
            Histogram[] delay = new Histogram[threads];
            AtomicLong acked = new AtomicLong(), sent = new AtomicLong();
            Thread[] ts = new Thread[threads];
            for (int t = 0; t < threads; t++) {
                List<KafkaProducer<String, byte[]>> mine = new ArrayList<>();
                for (int k = t; k < ps.size(); k += threads) mine.add(ps.get(k));
                double nanosPerMsg = 1e9 / (rate * mine.size() / producers);
                Histogram h = delay[t] = new Histogram(3);
                h.setAutoResize(true);
                ts[t] = new Thread(() -> {
                    byte[] payload = new byte[1024];
                    long k = 0;
                    while (true) {
                        long intended = start + (long) (k * nanosPerMsg);
                        if (intended >= measureTo) break;
                        long now;
                        while ((now = System.nanoTime()) < intended) LockSupport.parkNanos(Math.min(intended - now, 50_000_000L));
                        long send = System.nanoTime();
                        mine.get((int) (k % mine.size())).send(new ProducerRecord<>(topic, null, payload), (md, ex) -> {
                            if (ex == null) acked.incrementAndGet();
                        });
                        sent.incrementAndGet();
                        if (intended >= measureFrom) h.recordValue(Math.max(0, (send - intended) / 1000));
                        k++;
                    }
                }, "plain-sender-" + t);
                ts[t].start();
            }
            for (Thread t : ts) t.join();
            for (KafkaProducer<String, byte[]> p : ps) { p.flush(); p.close(Duration.ofSeconds(30)); }
            Histogram all = new Histogram(3);
            all.setAutoResize(true);
            for (Histogram h : delay) all.add(h);
            System.out.printf("{\"publishDelayP50Micros\": %d, \"publishDelayP99Micros\": %d, \"sent\": %d, \"acked\": %d, \"measured\": %d}%n",
                    all.getValueAtPercentile(50), all.getValueAtPercentile(99), sent.get(), acked.get(), all.getTotalCount());
            admin.deleteTopics(List.of(topic)).all().get(60, TimeUnit.SECONDS);
        }
    }
}
