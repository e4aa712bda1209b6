package org.streambench.runner;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;
import java.util.Map;

/** What the runner needs from a messaging system. */
public interface Driver extends AutoCloseable {
    /**
     * A send's completion. Also a future's completion action, so a driver whose client answers with a future hands the
     * callback over as it is (no wrapping lambda, one object less per message).
     */
    interface SendCallback extends java.util.function.BiConsumer<Object, Throwable> {
        void done(Throwable error);

        @Override
        default void accept(Object ignored, Throwable error) { done(error); }
    }

    interface Producer {
        /** true if send() has copied the payload when it returns (the caller may then reuse its buffer) */
        default boolean copiesPayloadOnSend() { return false; }

        /** asynchronous send; may block when the client's queue is full (as the clients do) */
        void send(String key, byte[] payload, SendCallback cb);
        void flush() throws Exception;

        /**
         * flush() bounded by a timeout: a client whose flush has no timeout of its own (Kafka's waits for every
         * in-flight send, up to delivery.timeout.ms) is flushed on a helper thread that is abandoned past the timeout.
         */
        default void flush(long timeoutMs) throws Exception {
            Exception[] failure = new Exception[1];
            Thread t = new Thread(() -> {
                try { flush(); } catch (Exception e) { failure[0] = e; }
            }, "flush");
            t.setDaemon(true);
            t.start();
            t.join(timeoutMs);
            if (t.isAlive()) throw new java.util.concurrent.TimeoutException("flush did not finish within " + timeoutMs + " ms");
            if (failure[0] != null) throw failure[0];
        }

        void close() throws Exception;
    }

    /** how long any single blocking client call (create, subscribe, close, an admin request) may take */
    long CALL_TIMEOUT_MS = 30_000;

    /** waits for a client future, bounded by CALL_TIMEOUT_MS; a timeout names the operation */
    static <T> T await(java.util.concurrent.CompletableFuture<T> f, String what) throws Exception {
        try {
            return f.get(CALL_TIMEOUT_MS, java.util.concurrent.TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            f.cancel(true);
            throw new java.util.concurrent.TimeoutException(what + " did not finish within " + CALL_TIMEOUT_MS / 1000 + " s");
        } catch (java.util.concurrent.ExecutionException e) {
            throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
        }
    }

    interface Handler { void onMessage(byte[] payload, int partition); }

    interface Consumer extends AutoCloseable {
        void pause();
        void resume();
        void close() throws Exception;
    }

    /** Full topic names for the run's topics. */
    List<String> topicNames(String runId, int topics);

    void createTopics(List<String> topics, int partitions) throws Exception;

    void waitForTopics(List<String> topics, int partitions, long timeoutMs) throws Exception;

    Producer createProducer(String topic) throws Exception;

    Consumer createConsumer(String topic, String subscription, Handler handler) throws Exception;

    /**
     * Starts creating a consumer without waiting for the system (fan-out workloads, see FanOut): the future
     * completes once the consumer is attached (Pulsar: subscribed; Kafka: its group has given it an assignment).
     */
    default java.util.concurrent.CompletableFuture<Consumer> connectConsumer(String topic, String subscription, Handler handler) {
        try {
            return java.util.concurrent.CompletableFuture.completedFuture(createConsumer(topic, subscription, handler));
        } catch (Exception e) {
            return java.util.concurrent.CompletableFuture.failedFuture(e);
        }
    }

    /** Blocks until every subscription has its expected number of consumers attached (all processes). */
    void waitConsumersReady(Map<String, Integer> expectedPerSubscription, long timeoutMs) throws Exception;

    /**
     * The run's subscriptions, all processes' (before any consumer is created), for a driver whose clean-up must name
     * them: Pravega's reader groups are objects of their own, and the process that deletes the topics may not have
     * consumed every subscription.
     */
    default void runSubscriptions(List<String> names) {}

    void deleteTopics(List<String> topics) throws Exception;

    ObjectNode endpoints();

    /** Closes producers and consumers (admin access stays open for clean-up). */
    void closeClients();

    /** Closes every client in {@code open} (a list the driver guards with its own lock) and empties it. */
    static void closeAll(List<AutoCloseable> open) {
        List<AutoCloseable> l;
        synchronized (open) { l = new java.util.ArrayList<>(open); open.clear(); }
        closeParallel(l);
    }

    /**
     * Closes every client, up to 32 at a time: a fan-out run's thousands of consumers each take tens of ms to leave
     * (Kafka: commit, LeaveGroup), minutes one after another.
     */
    static void closeParallel(List<? extends AutoCloseable> l) {
        if (l.size() <= 8) {
            for (AutoCloseable c : l) {
                try { c.close(); } catch (Exception e) { Log.warn("close: " + e); }
            }
            return;
        }
        var pool = java.util.concurrent.Executors.newFixedThreadPool(32, r -> {
            Thread t = new Thread(r, "close");
            t.setDaemon(true);
            return t;
        });
        try {
            for (AutoCloseable c : l) pool.execute(() -> {
                try { c.close(); } catch (Exception e) { Log.warn("close: " + e); }
            });
            pool.shutdown();
            if (!pool.awaitTermination(5, java.util.concurrent.TimeUnit.MINUTES)) Log.warn("close: clients still closing after 5 min");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            pool.shutdownNow();
        }
    }

    @Override
    void close();
}
