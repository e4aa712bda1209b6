package org.streambench.runner.bench;

import io.pravega.client.ClientConfig;
import io.pravega.client.EventStreamClientFactory;
import io.pravega.client.admin.StreamManager;
import io.pravega.client.stream.EventStreamWriter;
import io.pravega.client.stream.EventWriterConfig;
import io.pravega.client.stream.ScalingPolicy;
import io.pravega.client.stream.StreamConfiguration;
import io.pravega.client.stream.impl.ByteBufferSerializer;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import org.streambench.runner.RateSearch;
import org.streambench.runner.Workload;
import org.streambench.runner.StepJudge;

import java.net.URI;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * The baseline of runner/bench/maxrate_vs_pravega_writer.py: a plain open-loop writer loop of the Pravega client
 * (the runner's jar of it) running the runner's max-rate search (RateSearch, judged by StepJudge: same steps, criteria
 * and bracket). One stream with one segment per partition (fixed policy), one EventStreamWriter per producer, the
 * runner's thread layout (min(producers, cores) sender threads, each with its share of the rate and its writers), no
 * routing key, events as OMB's Pravega driver writes them (8-byte ms timestamp + payload). Each step starts a fresh
 * schedule (intended = step start + k / rate; a sender that is behind sends back-to-back; the previous step's debt is
 * dropped, as in the runner); per-second samples of the sends in flight and the publish delay of the judged seconds.
 * No audit header, no latency histograms, no consumers. Prints one JSON line.
 *
 * <p>CAP_RATE (msg/s, optional, 0 = none): a token bucket in front of writeEvent that lets at most that many events
 * through per second, for the script's self-test (a write path that is deliberately slower must fail the check).
 * GROWTH (optional, default 2): the search's growth factor (the runner's {@code rateDiscovery.growthFactor}).
 * MAX_MBPS (optional, 0 = none): the search's ceiling, the runner's {@code rateDiscovery.maxRateMBps} (10^6 bytes of
 * payload a second), turned into msg/s by the runner's own {@link Workload#ceilingRate}; printed as ceilingRate.
 *
 *   java -cp omb-runner.jar:lib/* org.streambench.runner.bench.PlainWriterLoop CONTROLLER_URI SCOPE PARTITIONS
 *        PRODUCERS SIZE WARMUP_S INITIAL_RATE STEP_S SETTLE_S MAX_STEPS RETRIES MAX_DELAY_MS [CAP_RATE [GROWTH
 *        [MAX_MBPS]]]
 */
public final class PlainWriterLoop {
    static volatile double rate;
    static volatile long segmentStart;
    static volatile int version;
    static volatile boolean stop;
    static final LongAdder sent = new LongAdder(), acked = new LongAdder(), failed = new LongAdder();
    static final Recorder delay = new Recorder(3);

    public static void main(String[] a) throws Exception {
        String controller = a[0], scope = a[1];
        int partitions = Integer.parseInt(a[2]), producers = Integer.parseInt(a[3]), size = Integer.parseInt(a[4]);
        int warmup = Integer.parseInt(a[5]);
        double initial = Double.parseDouble(a[6]);
        int stepSeconds = Integer.parseInt(a[7]), settle = Integer.parseInt(a[8]), maxSteps = Integer.parseInt(a[9]);
        int retries = Integer.parseInt(a[10]);
        long maxDelayMicros = Long.parseLong(a[11]) * 1000;
        double cap = a.length > 12 ? Double.parseDouble(a[12]) : 0;
        double growth = a.length > 13 ? Double.parseDouble(a[13]) : 2.0;
        double maxMBps = a.length > 14 && Double.parseDouble(a[14]) > 0 ? Double.parseDouble(a[14]) : Double.POSITIVE_INFINITY;
        double ceiling = Workload.ceilingRate(maxMBps, size);
        String stream = "plain-" + Long.toString(System.currentTimeMillis(), 36);
        ClientConfig cc = ClientConfig.builder().controllerURI(URI.create(controller)).build();
        try (StreamManager sm = StreamManager.create(cc)) {
            sm.createScope(scope);
            sm.createStream(scope, stream, StreamConfiguration.builder().scalingPolicy(ScalingPolicy.fixed(partitions)).build());
            List<EventStreamWriter<ByteBuffer>> ws = new ArrayList<>();
            EventStreamClientFactory f = EventStreamClientFactory.withScope(scope, cc);
            for (int i = 0; i < producers; i++)
                ws.add(f.createEventWriter(stream, new ByteBufferSerializer(), EventWriterConfig.builder().build()));
            int threads = Math.max(1, Math.min(producers, Runtime.getRuntime().availableProcessors()));
            TokenBucket bucket = cap > 0 ? new TokenBucket(cap) : null;
            rate = initial;
            segmentStart = System.nanoTime();
            Thread[] ts = new Thread[threads];
            for (int t = 0; t < threads; t++) {
                List<EventStreamWriter<ByteBuffer>> mine = new ArrayList<>();
                for (int k = t; k < ws.size(); k += threads) mine.add(ws.get(k));
                double share = (double) mine.size() / producers;
                ts[t] = new Thread(() -> send(mine, share, size, bucket), "plain-sender-" + t);
                ts[t].setDaemon(true);
                ts[t].start();
            }
            // warm-up at the initial rate, then the search: one step per rate, judged after its settle seconds
            long tick = System.nanoTime();
            for (int s = 0; s < warmup; s++) tick = sleepUntil(tick + 1_000_000_000L);
            RateSearch search = new RateSearch(initial, maxSteps, retries, growth, ceiling);
            StringBuilder steps = new StringBuilder();
            while (true) {
                double r = search.current();
                setRate(r);
                tick = System.nanoTime();
                // the runner's Window: judging starts settle seconds into the step with a first sample, then one per second
                List<Long> inFlight = new ArrayList<>();
                long sent0 = 0, sentLast = 0;
                Histogram d = new Histogram(3);
                d.setAutoResize(true);
                boolean judging = settle == 0;
                if (judging) {
                    sent0 = sentLast = sent.sum();
                    inFlight.add(sent0 - acked.sum() - failed.sum());
                    delay.getIntervalHistogram();
                }
                for (int s = 1; s <= stepSeconds; s++) {
                    tick = sleepUntil(tick + 1_000_000_000L);
                    Histogram interval = delay.getIntervalHistogram();
                    long snt = sent.sum(), pending = snt - acked.sum() - failed.sum();
                    if (!judging) {
                        if (s >= settle) {
                            judging = true;
                            sent0 = sentLast = snt;
                            inFlight.add(pending);
                        }
                        continue;
                    }
                    d.add(interval);
                    inFlight.add(pending);
                    sentLast = snt;
                }
                long[] fl = inFlight.stream().mapToLong(Long::longValue).toArray();
                double seconds = Math.max(0, fl.length - 1);
                StepJudge.Verdict v = StepJudge.judge(r, seconds, sentLast - sent0, fl, new long[0], 0,
                        d.getValueAtPercentile(99), maxDelayMicros);
                boolean retry = search.retrying();
                if (steps.length() > 0) steps.append(", ");
                steps.append(String.format("{\"targetRate\": %.1f, \"retry\": %b, \"sendRate\": %.1f, \"publishDelayP99Micros\": %d, "
                        + "\"inFlightGrowth\": %.1f, \"maxInFlight\": %d, \"pass\": %b}", r, retry, v.sendRate, v.delayP99Micros,
                        v.inFlightGrowth, v.maxInFlight, v.pass));
                System.err.printf("plain step %d%s: target %.0f msg/s, sent %.0f, delay p99 %d us, in flight %d: %s%n", search.steps(),
                        retry ? " (retry)" : "", r, v.sendRate, v.delayP99Micros, fl.length > 0 ? fl[fl.length - 1] : 0,
                        v.pass ? "pass" : "FAIL (" + String.join("; ", v.reasons) + ")");
                if (search.record(v.pass)) break;
            }
            stop = true;
            for (Thread t : ts) t.join(30_000);
            // bounded: a writer's flush has no timeout of its own (the runner bounds it the same way)
            java.util.concurrent.CompletableFuture.runAsync(() -> {
                for (EventStreamWriter<ByteBuffer> w : ws) { w.flush(); w.close(); }
                f.close();
            }).get(30, java.util.concurrent.TimeUnit.SECONDS);
            System.out.printf("{\"accepted\": %.1f, \"rejected\": %s, \"ceilingReached\": %s, \"ceilingRate\": %s, \"steps\": [%s], \"sent\": %d, "
                            + "\"acked\": %d, \"failed\": %d}%n",
                    search.accepted(), Double.isInfinite(search.rejected()) ? "null" : String.format("%.1f", search.rejected()),
                    search.ceilingReached(), Double.isInfinite(ceiling) ? "null" : String.format("%.1f", ceiling), steps, sent.sum(), acked.sum(), failed.sum());
            sm.sealStream(scope, stream);
            sm.deleteStream(scope, stream);
        }
        System.exit(0);
    }

    static void setRate(double r) {
        rate = r;
        segmentStart = System.nanoTime();
        version++;
    }

    static long sleepUntil(long t) {
        long now;
        while ((now = System.nanoTime()) < t) LockSupport.parkNanos(t - now);
        return t;
    }

    static void send(List<EventStreamWriter<ByteBuffer>> mine, double share, int size, TokenBucket bucket) {
        byte[] payload = new byte[size];
        int v = -1;
        long start = 0, k = 0, i = 0;
        double nanosPerMsg = 0;
        while (!stop) {
            if (v != version) {
                v = version;
                start = segmentStart;
                nanosPerMsg = 1e9 / (rate * share);
                k = 0;
            }
            long intended = start + (long) (k * nanosPerMsg);
            long now = System.nanoTime();
            if (intended > now) {
                LockSupport.parkNanos(Math.min(intended - now, 50_000_000L));
                continue;
            }
            if (bucket != null) bucket.take();
            long sendAt = System.nanoTime();
            ByteBuffer ev = ByteBuffer.allocate(Long.BYTES + size);
            ev.putLong(System.currentTimeMillis()).put(payload).flip();
            sent.increment();
            mine.get((int) (i++ % mine.size())).writeEvent(ev).whenComplete((x, ex) -> {
                if (ex == null) acked.increment(); else failed.increment();
            });
            delay.recordValue(Math.max(0, (sendAt - intended) / 1000));
            k++;
        }
    }

    /** at most `rate` events per second through take(), shared by the sender threads (self-test only) */
    static final class TokenBucket {
        final double nanosPerToken;
        long next = System.nanoTime();

        TokenBucket(double rate) { nanosPerToken = 1e9 / rate; }

        void take() {
            long at;
            synchronized (this) {
                long now = System.nanoTime();
                if (next < now - 100_000_000L) next = now - 100_000_000L; // at most 0.1 s of burst
                at = next;
                next += (long) nanosPerToken;
            }
            long now;
            while ((now = System.nanoTime()) < at) LockSupport.parkNanos(at - now);
        }
    }
}
