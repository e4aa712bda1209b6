package org.streambench.runner;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.*;

/** FanOut's bookkeeping (pure logic: a driver stub whose consumers connect when the test says so). */
class FanOutTest {
    /** Consumers connect when complete() is called; counts how many connects are in flight at once. */
    static final class StubDriver implements Driver {
        final List<CompletableFuture<Consumer>> pending = new ArrayList<>();
        final AtomicInteger inFlight = new AtomicInteger(), maxInFlight = new AtomicInteger();
        final List<Handler> handlers = new ArrayList<>();

        @Override
        public synchronized CompletableFuture<Consumer> connectConsumer(String topic, String sub, Handler h) {
            CompletableFuture<Consumer> f = new CompletableFuture<>();
            pending.add(f);
            handlers.add(h);
            maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
            return f;
        }

        synchronized void completeAll() {
            for (CompletableFuture<Consumer> f : pending) {
                inFlight.decrementAndGet();
                f.complete(new Consumer() {
                    public void pause() { }
                    public void resume() { }
                    public void close() { }
                });
            }
            pending.clear();
        }

        public List<String> topicNames(String runId, int topics) { return List.of("t"); }
        public void createTopics(List<String> topics, int partitions) { }
        public void waitForTopics(List<String> topics, int partitions, long timeoutMs) { }
        public Producer createProducer(String topic) { throw new UnsupportedOperationException(); }
        public Consumer createConsumer(String topic, String subscription, Handler handler) { throw new UnsupportedOperationException(); }
        public void waitConsumersReady(Map<String, Integer> expected, long timeoutMs) { }
        public void deleteTopics(List<String> topics) { }
        public ObjectNode endpoints() { return Fields.JSON.createObjectNode(); }
        public void closeClients() { }
        public void close() { }
    }

    static Workload workload(int subs, int concurrency) throws Exception {
        Path t = Files.createTempFile("fan", ".yaml");
        Files.writeString(t, "name: fan\ntopics: 1\npartitionsPerTopic: 1\nmessageSize: 1024\nuseRandomizedPayloads: true\n"
                + "randomizedPayloadPoolSize: 1\nsubscriptionsPerTopic: " + subs + "\nconsumerPerSubscription: 1\nproducersPerTopic: 1\n"
                + "producerRate: 1\ntestDurationMinutes: 1\nx-streambench:\n  fanOut: {connectConcurrency: " + concurrency
                + ", connectDeadlineSeconds: 1}\n");
        Workload w = Workload.load(t.toString());
        Files.delete(t);
        return w;
    }

    @Test
    void boundsConnectsInFlightAndRecordsEveryConsumer() throws Exception {
        Workload w = workload(10, 4);
        assertTrue(w.fanOut());
        FanOut f = new FanOut(w, 10);
        StubDriver d = new StubDriver();
        Thread completer = new Thread(() -> {
            for (int k = 0; k < 50; k++) {
                try { Thread.sleep(5); } catch (InterruptedException e) { return; }
                d.completeAll();
            }
        });
        completer.start();
        for (int i = 0; i < 10; i++) assertTrue(f.connect(d, i, "t", "sub-" + i, (p, part) -> { }, () -> false));
        List<Driver.Consumer> cs = f.await(() -> false);
        completer.join();
        assertEquals(10, cs.size());
        assertTrue(d.maxInFlight.get() <= 4, "at most connectConcurrency in flight: " + d.maxInFlight.get());
        d.handlers.get(3).onMessage(new byte[64], 0);
        ObjectNode j = f.toJson();
        assertEquals(10, j.get("consumers").asInt());
        assertEquals(0, j.get("neverConnected").asInt());
        assertEquals(9, j.get("connectedWithoutMessages").asInt());
        assertEquals(1, j.at("/perConsumer/received/3").asInt());
        assertTrue(j.at("/perConsumer/firstMessage/3").asLong() >= 0);
        assertEquals(-1, j.at("/perConsumer/firstMessage/0").asLong());
        assertTrue(f.unconnectedSubscriptions().isEmpty());
        assertEquals(new FanOut.SubConsumers(1, 1), f.perSubscription().get("sub-3"));
    }

    @Test
    void consumersNotConnectedByTheDeadlineAreCounted() throws Exception {
        Workload w = workload(3, 2);
        FanOut f = new FanOut(w, 3);
        StubDriver d = new StubDriver();
        assertTrue(f.connect(d, 0, "t", "sub-0", (p, part) -> { }, () -> false));
        assertTrue(f.connect(d, 1, "t", "sub-1", (p, part) -> { }, () -> false));
        // two in flight, none completes: the third waits for a permit until the 1-s deadline passes
        assertFalse(f.connect(d, 2, "t", "sub-2", (p, part) -> { }, () -> false));
        f.await(() -> false);
        ObjectNode j = f.toJson();
        assertEquals(3, j.get("neverConnected").asInt());
        assertEquals(0, j.get("connected").asInt());
        assertTrue(j.get("connectionTimeSeconds").isNull());
        assertEquals(List.of("sub-0", "sub-1", "sub-2"), new ArrayList<>(f.unconnectedSubscriptions()));
        assertEquals(new FanOut.SubConsumers(1, 0), f.perSubscription().get("sub-2"), "launched or not, a consumer of this process");
    }

    @Test
    void mergeRebasesEveryPartOntoOneClock() {
        // part 0 started connecting at t=1 000 000 µs (epoch), part 1 at t=1 500 000; last consumer connected at 4.0 s
        ObjectNode p0 = part(1_000_000, new long[]{0, 100}, new long[]{200, 2_000}, new long[]{5, 5});
        ObjectNode p1 = part(1_500_000, new long[]{0}, new long[]{2_500}, new long[]{5});
        ObjectNode m = FanOut.merge(List.of("p0", "p1"), List.of(p0, p1));
        assertEquals(3, m.get("consumers").asInt());
        assertEquals(3, m.get("connected").asInt());
        assertEquals(3.0, m.get("connectionTimeSeconds").asDouble(), 1e-9, "first start 1.0 s -> last connected 4.0 s");
        assertEquals(1_000_000, m.at("/perConsumer/baseEpochMicros").asLong());
        assertEquals(3_000, m.at("/perConsumer/connected/2").asLong(), "part 1's consumer re-based: 0.5 s + 2.5 s");
        assertEquals(3_000.0, m.at("/connectedAfterMs/max").asDouble(), 3.0);
        assertEquals(5, m.get("receivedPerConsumerMin").asInt());
    }

    private static ObjectNode part(long base, long[] startMs, long[] connectedMs, long[] received) {
        ObjectNode doc = Fields.JSON.createObjectNode();
        ObjectNode f = doc.putObject("x-streambench").putObject("fanOut");
        f.put("connectConcurrency", 10);
        f.put("connectDeadlineSeconds", 60);
        ObjectNode pc = f.putObject("perConsumer");
        pc.put("baseEpochMicros", base);
        var s = pc.putArray("connectStart");
        var c = pc.putArray("connected");
        var fm = pc.putArray("firstMessage");
        var r = pc.putArray("received");
        for (int i = 0; i < startMs.length; i++) { s.add(startMs[i]); c.add(connectedMs[i]); fm.add(connectedMs[i] + 1); r.add(received[i]); }
        return doc;
    }

    @Test
    void mergeRefusesAPartWithoutTheBlock() {
        ObjectNode p0 = part(1_000_000, new long[]{0}, new long[]{1}, new long[]{1});
        JsonNode p1 = Fields.JSON.createObjectNode().putObject("x-streambench");
        ObjectNode wrap = Fields.JSON.createObjectNode();
        wrap.set("x-streambench", p1);
        assertThrows(ConfigException.class, () -> FanOut.merge(List.of("p0", "p1"), List.of(p0, wrap)));
    }

    @Test
    void stripedRecorderKeepsThreadsWhoseIdsShareATableEntryApart() throws Exception {
        StripedRecorder r = new StripedRecorder(1);
        java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1), recorded = new java.util.concurrent.CountDownLatch(1);
        Thread a = new Thread(() -> {
            r.record(0, 1000);
            recorded.countDown();
            try { go.await(); } catch (InterruptedException e) { throw new AssertionError(e); }
            for (int i = 0; i < 1000; i++) r.record(0, 1000);
        });
        a.start();
        recorded.await();
        assertSame(a, r.cachedAt(a), "the first thread at an entry is kept in the table");
        // threads get ids in creation order: make ones until one lands on a's entry while a is alive
        Thread b = null;
        for (int i = 0; i < 4 * StripedRecorder.TABLE && b == null; i++) {
            Thread t = new Thread(() -> { for (int k = 0; k < 1000; k++) r.record(0, 5000); });
            if ((t.getId() - a.getId()) % StripedRecorder.TABLE == 0) b = t;
        }
        assertNotNull(b);
        b.start();
        b.join();
        assertSame(a, r.cachedAt(b), "a live thread keeps its entry; the other one asks its ThreadLocal");
        go.countDown();
        a.join();
        Thread c = null;
        for (int i = 0; i < 4 * StripedRecorder.TABLE && c == null; i++) {
            Thread t = new Thread(() -> r.record(0, 9000));
            if ((t.getId() - a.getId()) % StripedRecorder.TABLE == 0) c = t;
        }
        c.start();
        c.join();
        assertSame(c, r.cachedAt(a), "the entry of a thread that ended goes to the next one");
        org.HdrHistogram.Histogram sum = r.interval(null)[0];
        assertEquals(2002, sum.getTotalCount());
        assertEquals(1001, sum.getCountAtValue(1000));
        assertEquals(1000, sum.getCountAtValue(5000));
        assertEquals(1, sum.getCountAtValue(9000));
    }

    @Test
    void stripedRecorderSumsOwnAndSharedRecordersAndRecyclesTheirHistograms() throws Exception {
        // more recording threads than own recorders (a Kafka fan-out run: one polling thread per consumer)
        StripedRecorder r = new StripedRecorder(1);
        int threads = StripedRecorder.MAX_OWN + 3 * StripedRecorder.SHARED;
        Runnable tick = () -> {
            List<Thread> ts = new ArrayList<>();
            for (int i = 0; i < threads; i++) ts.add(new Thread(() -> { r.record(0, 1000); r.record(0, 2000); }));
            ts.forEach(Thread::start);
            for (Thread t : ts) {
                try { t.join(); } catch (InterruptedException e) { throw new AssertionError(e); }
            }
        };
        tick.run();
        org.HdrHistogram.Histogram[] sum = r.interval(null);
        assertEquals(2L * threads, sum[0].getTotalCount(), "every thread's samples, own and shared recorders");
        // the next tick reuses its histograms (into, and each row's spent histograms) and counts only new samples
        tick.run();
        org.HdrHistogram.Histogram first = sum[0];
        org.HdrHistogram.Histogram[] again = r.interval(sum);
        assertSame(sum, again);
        assertSame(first, again[0]);
        assertEquals(2L * threads, again[0].getTotalCount());
        assertEquals(0, r.interval(again)[0].getTotalCount(), "nothing recorded since");
    }
}
