package org.streambench.runner;

/**
 * A consumer whose client is polled by one thread of its own (Kafka's KafkaConsumer, Pravega's EventStreamReader):
 * the thread, the pause flag the loop reads, and a close that stops the loop, waits for it (bounded by
 * {@link Driver#CALL_TIMEOUT_MS}) and then releases the client. A subclass sets its fields, then calls {@link #start}.
 */
abstract class PollingConsumer implements Driver.Consumer {
    private final Thread thread;
    /** where the loop hands each message */
    protected final Driver.Handler handler;
    /** read by the loop: pause() / resume() only set it, the loop acts on it in its own thread */
    protected volatile boolean paused;
    protected volatile boolean closed;

    PollingConsumer(String threadName, Driver.Handler handler) {
        this.handler = handler;
        thread = new Thread(this::loop, threadName);
        thread.setDaemon(true);
    }

    /** starts the polling thread; the last statement of a subclass's constructor */
    protected final void start() { thread.start(); }

    /** polls until {@link #closed}; runs in the consumer's own thread */
    protected abstract void loop();

    /** unblocks a poll in progress so that the loop sees {@link #closed} (called once, before the join) */
    protected void wake() {}

    /** frees the client after the loop has ended or the join timed out (called once) */
    protected void release() {}

    @Override
    public final void pause() { paused = true; }

    @Override
    public final void resume() { paused = false; }

    @Override
    public final void close() throws Exception {
        if (closed) return;
        closed = true;
        wake();
        thread.join(Driver.CALL_TIMEOUT_MS);
        release();
    }
}
