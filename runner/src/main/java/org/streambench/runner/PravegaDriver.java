package org.streambench.runner;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.pravega.client.ClientConfig;
import io.pravega.client.EventStreamClientFactory;
import io.pravega.client.admin.ReaderGroupManager;
import io.pravega.client.admin.StreamManager;
import io.pravega.client.stream.EventPointer;
import io.pravega.client.stream.EventRead;
import io.pravega.client.stream.EventStreamReader;
import io.pravega.client.stream.EventStreamWriter;
import io.pravega.client.stream.EventWriterConfig;
import io.pravega.client.stream.ReaderConfig;
import io.pravega.client.stream.ReaderGroupConfig;
import io.pravega.client.stream.ScalingPolicy;
import io.pravega.client.stream.Serializer;
import io.pravega.client.stream.Stream;
import io.pravega.client.stream.StreamConfiguration;
import io.pravega.client.stream.Transaction;
import io.pravega.client.stream.TransactionalEventStreamWriter;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Pravega driver, OMB's semantics (driver-pravega): one EventStreamWriter per producer (the workload's key as routing
 * key, none with NO_KEY), a reader group per subscription and topic (one reader per consumer, read from the head of
 * the stream), one stream per topic with one segment per partition (a fixed scaling policy unless the driver file
 * enables auto-scaling). With {@code includeTimestampInEvent} (OMB's default) every event carries OMB's 8-byte
 * millisecond timestamp before the payload, so the bytes on the wire are OMB's; the runner's own latency and audit
 * come from the header at the start of the payload, as for the other systems.
 */
final class PravegaDriver implements Driver {
    private final DriverConfig cfg;
    private final String controllerURI;
    private final ClientConfig clientConfig;
    private final StreamManager streams;
    private final ReaderGroupManager groups;
    private final EventStreamClientFactory factory;
    private final List<AutoCloseable> open = new ArrayList<>();
    private final java.util.Set<String> subscriptions = new java.util.LinkedHashSet<>(); // the run's (runSubscriptions) and this process's readers
    private volatile List<String> topics = List.of();
    private final ExecutorService admin = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "pravega-admin");
        t.setDaemon(true);
        return t;
    });
    private final Serializer<byte[]> serializer;

    PravegaDriver(DriverConfig cfg, String controllerOverride) {
        this.cfg = cfg;
        this.controllerURI = controllerOverride != null ? controllerOverride : cfg.controllerURI;
        if (controllerURI == null) throw new ConfigException(cfg.file, "client.controllerURI", "missing, and no --cluster given");
        this.clientConfig = ClientConfig.builder().controllerURI(URI.create(controllerURI)).build();
        this.serializer = new EventSerializer(cfg.includeTimestampInEvent);
        this.streams = StreamManager.create(clientConfig);
        this.groups = ReaderGroupManager.withScope(cfg.scopeName, clientConfig);
        this.factory = EventStreamClientFactory.withScope(cfg.scopeName, clientConfig);
    }

    /**
     * An event is [OMB's 8-byte ms timestamp] + payload; reading returns the payload (the runner's header first).
     * Serialising copies the payload (with the timestamp) or wraps it (without).
     */
    static final class EventSerializer implements Serializer<byte[]> {
        final boolean timestamp;

        EventSerializer(boolean timestamp) { this.timestamp = timestamp; }

        @Override
        public ByteBuffer serialize(byte[] value) {
            if (!timestamp) return ByteBuffer.wrap(value);
            ByteBuffer b = ByteBuffer.allocate(Long.BYTES + value.length);
            b.putLong(System.currentTimeMillis()).put(value).flip();
            return b;
        }

        @Override
        public byte[] deserialize(ByteBuffer b) {
            if (timestamp) b.position(b.position() + Long.BYTES);
            byte[] out = new byte[b.remaining()];
            b.get(out);
            return out;
        }
    }

    /** runs a blocking admin call of the Pravega client (they retry internally for minutes) bounded by CALL_TIMEOUT_MS */
    private <T> T bounded(String what, Callable<T> call) throws Exception {
        CompletableFuture<T> f = new CompletableFuture<>();
        admin.execute(() -> {
            try { f.complete(call.call()); } catch (Throwable t) { f.completeExceptionally(t); }
        });
        return Driver.await(f, what);
    }

    @Override
    public ObjectNode endpoints() {
        ObjectNode n = Fields.JSON.createObjectNode();
        n.put("controllerURI", controllerURI);
        n.put("scopeName", cfg.scopeName);
        return n;
    }

    @Override
    public List<String> topicNames(String runId, int topics) {
        List<String> l = new ArrayList<>();
        for (int i = 0; i < topics; i++) l.add(String.format("sb-%s-%04d", runId, i));
        return l;
    }

    static ScalingPolicy scalingPolicy(DriverConfig cfg, int segments) {
        if (!cfg.enableStreamAutoScaling) return ScalingPolicy.fixed(segments);
        // as OMB: the event rate wins when both are given, scale factor 2, at least `partitions` segments
        return cfg.eventsPerSecond > 0 ? ScalingPolicy.byEventRate(cfg.eventsPerSecond, 2, segments)
                : ScalingPolicy.byDataRate(cfg.kbytesPerSecond, 2, segments);
    }

    @Override
    public void createTopics(List<String> topics, int partitions) throws Exception {
        this.topics = List.copyOf(topics);
        if (cfg.createScope) bounded("creating scope " + cfg.scopeName, () -> streams.createScope(cfg.scopeName));
        StreamConfiguration sc = StreamConfiguration.builder().scalingPolicy(scalingPolicy(cfg, partitions)).build();
        for (String t : topics) {
            boolean created = bounded("creating stream " + cfg.scopeName + "/" + t, () -> streams.createStream(cfg.scopeName, t, sc));
            if (!created) throw new IllegalStateException("Pravega stream " + cfg.scopeName + "/" + t + " exists already");
        }
    }

    @Override
    public void waitForTopics(List<String> topics, int partitions, long timeoutMs) throws Exception {
        this.topics = List.copyOf(topics);
        long deadline = System.currentTimeMillis() + timeoutMs;
        for (String t : topics) {
            while (!bounded("checking stream " + t, () -> streams.checkStreamExists(cfg.scopeName, t))) {
                if (System.currentTimeMillis() > deadline) throw new IllegalStateException("stream " + t + " not created after " + timeoutMs + " ms");
                Thread.sleep(300);
            }
        }
    }

    private EventWriterConfig writerConfig() {
        return EventWriterConfig.builder().enableConnectionPooling(cfg.enableConnectionPooling).build();
    }

    @Override
    public Producer createProducer(String topic) throws Exception {
        Producer p = cfg.enableTransaction ? new TxnProducer(topic) : new PlainProducer(topic);
        synchronized (open) { open.add(p::close); }
        return p;
    }

    private final class PlainProducer implements Producer {
        final EventStreamWriter<byte[]> w;

        PlainProducer(String topic) throws Exception {
            w = bounded("creating a writer on " + topic, () -> factory.createEventWriter(topic, serializer, writerConfig()));
        }

        // with the timestamp the serializer copies the payload into a new buffer before writeEvent returns;
        // without, the writer keeps the caller's array until the event is acknowledged (it may resend it)
        @Override
        public boolean copiesPayloadOnSend() { return cfg.includeTimestampInEvent; }

        @Override
        public void send(String key, byte[] payload, SendCallback cb) {
            CompletableFuture<Void> f = key != null ? w.writeEvent(key, payload) : w.writeEvent(payload);
            f.whenComplete(cb);
        }

        @Override
        public void flush() { w.flush(); }

        @Override
        public void close() throws Exception { bounded("closing a writer", () -> { w.close(); return null; }); }
    }

    /**
     * OMB's transactional producer: events go into a transaction that is committed every eventsPerTransaction events
     * (and at flush); a send is acknowledged when its transaction's commit returned.
     */
    private final class TxnProducer implements Producer {
        final TransactionalEventStreamWriter<byte[]> w;
        Transaction<byte[]> txn;
        final List<SendCallback> pending = new ArrayList<>();

        TxnProducer(String topic) throws Exception {
            w = bounded("creating a transactional writer on " + topic,
                    () -> factory.createTransactionalEventWriter(UUID.randomUUID().toString(), topic, serializer, writerConfig()));
        }

        @Override
        public boolean copiesPayloadOnSend() { return cfg.includeTimestampInEvent; }

        @Override
        public synchronized void send(String key, byte[] payload, SendCallback cb) {
            try {
                if (txn == null) txn = w.beginTxn();
                if (key != null) txn.writeEvent(key, payload); else txn.writeEvent(payload);
                pending.add(cb);
                if (pending.size() >= cfg.eventsPerTransaction) commit();
            } catch (Exception e) {
                fail(e);
                cb.done(e);
            }
        }

        private void commit() throws Exception {
            Transaction<byte[]> t = txn;
            txn = null;
            t.commit();
            for (SendCallback c : pending) c.done(null);
            pending.clear();
        }

        private void fail(Exception e) {
            if (txn != null) {
                try { txn.abort(); } catch (Exception ignored) { }
                txn = null;
            }
            for (SendCallback c : pending) c.done(e);
            pending.clear();
        }

        @Override
        public synchronized void flush() throws Exception {
            if (txn == null) return;
            try {
                commit();
            } catch (Exception e) {
                fail(e);
                throw e;
            }
        }

        @Override
        public void close() throws Exception {
            synchronized (this) {
                fail(new IllegalStateException("producer closed with its transaction open (aborted)"));
            }
            bounded("closing a transactional writer", () -> { w.close(); return null; });
        }
    }

    /** the segment number of an event (its "partition" for the audit's order check); -1 if unknown */
    private static final MethodHandle SEGMENT = segmentHandle();

    private static MethodHandle segmentHandle() {
        try {
            Class<?> c = Class.forName("io.pravega.client.stream.impl.EventPointerImpl");
            var m = c.getDeclaredMethod("getSegment");
            m.setAccessible(true);
            return MethodHandles.lookup().unreflect(m);
        } catch (ReflectiveOperationException | RuntimeException e) {
            Log.warn("Pravega: event pointers do not name their segment (" + e + "); the per-partition order check is off");
            return null;
        }
    }

    static int segmentNumber(EventPointer p) {
        if (SEGMENT == null || p == null) return -1;
        try {
            Object seg = SEGMENT.invoke(p);
            // segment id = epoch << 32 | segment number; a fixed stream's segments are 0 .. partitions-1
            return (int) ((io.pravega.client.segment.impl.Segment) seg).getSegmentId();
        } catch (Throwable t) {
            return -1;
        }
    }

    private String groupName(String topic, String subscription) { return subscription + "-" + topic; }

    @Override
    public Consumer createConsumer(String topic, String subscription, Handler handler) throws Exception {
        String group = groupName(topic, subscription);
        ReaderGroupConfig rgc = ReaderGroupConfig.builder().stream(Stream.of(cfg.scopeName, topic)).build();
        synchronized (subscriptions) { subscriptions.add(subscription); }
        // every process's first reader of the group tries; the same configuration makes the others a no-op
        bounded("creating reader group " + group, () -> groups.createReaderGroup(group, rgc));
        String readerId = UUID.randomUUID().toString();
        EventStreamReader<byte[]> r = bounded("creating a reader in " + group,
                () -> factory.createReader(readerId, group, serializer, ReaderConfig.builder().disableTimeWindows(true).build()));
        // order is checked per segment when segments are the partitions; auto-scaling renumbers them
        Reader c = new Reader(r, handler, !cfg.enableStreamAutoScaling, "pravega-reader-" + group);
        synchronized (open) { open.add(c::close); }
        return c;
    }

    private static final class Reader extends PollingConsumer {
        final EventStreamReader<byte[]> r;
        final boolean segmentIsPartition;

        Reader(EventStreamReader<byte[]> r, Handler handler, boolean segmentIsPartition, String name) {
            super(name, handler);
            this.r = r;
            this.segmentIsPartition = segmentIsPartition;
            start();
        }

        @Override
        protected void loop() {
            while (!closed) {
                try {
                    if (paused) {
                        Thread.sleep(20);
                        continue;
                    }
                    EventRead<byte[]> e = r.readNextEvent(100);
                    byte[] payload = e.getEvent();
                    if (payload != null) handler.onMessage(payload, segmentIsPartition ? segmentNumber(e.getEventPointer()) : -1);
                } catch (InterruptedException ie) {
                    return;
                } catch (io.pravega.client.stream.ReinitializationRequiredException ex) {
                    if (!closed) Log.error("Pravega reader " + Thread.currentThread().getName() + " failed: " + ex);
                    return;
                } catch (Throwable t) {
                    if (closed) return;
                    // TruncatedDataException and transient errors: the next read goes on (OMB stops the reader instead)
                    Log.warn("Pravega reader " + Thread.currentThread().getName() + ": " + t);
                }
            }
        }

        @Override
        protected void release() {
            r.close(); // goes offline at its last position: the group's other readers take its segments without duplicates
        }
    }

    /** online readers of one reader group; 0 while no process has created it yet */
    private int onlineReaders(String group) throws Exception {
        return bounded("reading reader group " + group, () -> {
            try {
                return groups.getReaderGroup(group).getOnlineReaders().size();
            } catch (io.pravega.client.stream.ReaderGroupNotFoundException e) {
                return 0;
            }
        });
    }

    @Override
    public void waitConsumersReady(Map<String, Integer> expected, long timeoutMs) throws Exception {
        // expected counts the readers of a subscription over all topics (all processes): one reader group per topic
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (true) {
            StringBuilder sb = new StringBuilder();
            boolean ok = true;
            for (var e : expected.entrySet()) {
                int online = 0;
                for (String t : topics) online += onlineReaders(groupName(t, e.getKey()));
                if (online != e.getValue()) ok = false;
                sb.append(e.getKey()).append(": ").append(online).append("/").append(e.getValue()).append("; ");
            }
            if (ok) return;
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("readers not online after " + timeoutMs + " ms: " + sb);
            Thread.sleep(200);
        }
    }

    @Override
    public void runSubscriptions(List<String> names) {
        synchronized (subscriptions) { subscriptions.addAll(names); }
    }

    @Override
    public void deleteTopics(List<String> topics) throws Exception {
        List<String> errors = new ArrayList<>();
        List<String> subs;
        synchronized (subscriptions) { subs = new ArrayList<>(subscriptions); }
        for (String s : subs)
            for (String t : topics) {
                String g = groupName(t, s);
                try { bounded("deleting reader group " + g, () -> { groups.deleteReaderGroup(g); return null; }); }
                catch (io.pravega.client.stream.ReaderGroupNotFoundException ignored) { }
                catch (Exception e) { errors.add("reader group " + g + ": " + e); }
            }
        for (String t : topics) {
            try {
                bounded("sealing stream " + t, () -> streams.sealStream(cfg.scopeName, t));
                if (cfg.deleteStreams) bounded("deleting stream " + t, () -> streams.deleteStream(cfg.scopeName, t));
            } catch (Exception e) {
                errors.add("stream " + t + ": " + e);
            }
        }
        if (!errors.isEmpty()) throw new IllegalStateException("Pravega clean-up: " + String.join("; ", errors));
    }

    @Override
    public void closeClients() {
        Driver.closeAll(open);
    }

    @Override
    public void close() {
        closeClients();
        for (AutoCloseable c : new AutoCloseable[]{factory, groups, streams}) {
            try { bounded("closing the Pravega client", () -> { c.close(); return null; }); }
            catch (Exception e) { Log.warn("pravega client close: " + e); }
        }
        admin.shutdownNow();
    }
}
