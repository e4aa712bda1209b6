package org.streambench.runner.bench;

import org.HdrHistogram.Histogram;
import org.streambench.runner.Audit;
import org.streambench.runner.Clock;
import org.streambench.runner.MessageHeader;
import org.streambench.runner.Metrics;

import java.util.Arrays;

/**
 * Micro-benchmark of the runner's per-message bookkeeping: everything the runner adds to one message's life beyond
 * the client's own send/receive (payload copy + header stamp on send, the ack's three histogram records, the
 * receive's header parse, two e2e records and the audit). Prints ns per message (median of rounds) and the criterion
 * (median <= 1 µs of CPU per message); exits 1 when it fails. Usage: java -cp omb-runner.jar:lib/* org.streambench.runner.bench.RecordingCost [rounds] [msgsPerRound] [threads] [targetNs]
 */
public final class RecordingCost {
    /** The criterion: at most 1 microsecond of CPU per message for all of the runner's bookkeeping. */
    static final double TARGET_NS = 1000.0;

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 7;
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 2_000_000;
        int threads = args.length > 2 ? Integer.parseInt(args[2]) : 1;
        double targetNs = args.length > 3 ? Double.parseDouble(args[3]) : TARGET_NS; // a test sets an unreachable one
        Metrics m = new Metrics();
        Audit audit = new Audit("sub", threads, 100);
        byte[] template = new byte[1024];
        double[] perMsg = new double[rounds], wall = new double[rounds];
        for (int r = -2; r < rounds; r++) { // two warm-up rounds for the JIT
            final int round = r;
            Thread[] ts = new Thread[threads];
            final long[] cpu = new long[threads];
            long t0 = System.nanoTime();
            for (int t = 0; t < threads; t++) {
                final int pid = t;
                final long base = (long) (round + 2) * n;
                ts[t] = new Thread(() -> {
                    long c0 = java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
                    long sink = 0;
                    for (int i = 0; i < n; i++) {
                        long intended = System.nanoTime();
                        // send side
                        byte[] buf = new byte[1024];
                        System.arraycopy(template, 0, buf, 0, 1024);
                        long send = System.nanoTime();
                        MessageHeader.write(buf, pid, base + i, Clock.toEpochMicros(send), Clock.toEpochMicros(intended));
                        m.sent.increment();
                        // ack side
                        m.onSendComplete(intended, send, null);
                        // receive side
                        if (MessageHeader.valid(buf)) {
                            m.onReceive(MessageHeader.sendMicros(buf), MessageHeader.intendedMicros(buf), false);
                            if (audit.record(MessageHeader.producerId(buf), MessageHeader.sequence(buf), i % 100)) sink++;
                        }
                    }
                    if (sink < 0) System.out.println(sink);
                    cpu[pid] = java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime() - c0;
                });
            }
            for (Thread t : ts) t.start();
            for (Thread t : ts) t.join();
            long el = System.nanoTime() - t0;
            Histogram[] h = m.interval(null); // what the 1-s tick does
            long cpuSum = 0;
            for (long c : cpu) cpuSum += c;
            if (r >= 0) perMsg[r] = (double) cpuSum / ((double) n * threads); // CPU time per message (immune to other processes' load)
            if (r >= 0) wall[r] = (double) el / n;
            if (h[Metrics.PUBLISH].getTotalCount() != (long) n * threads) throw new IllegalStateException("lost samples");
        }
        double[] s = perMsg.clone();
        Arrays.sort(s);
        double med = s[s.length / 2];
        System.out.printf("recording cost per message (send+ack+receive bookkeeping, %d thread(s)): median %.1f ns CPU over %d rounds of %d msgs (min %.1f, max %.1f)%n",
                threads, med, rounds, n, s[0], s[s.length - 1]);
        double[] w = wall.clone();
        Arrays.sort(w);
        System.out.printf("  (wall-clock per message per thread, includes waiting for the CPU on a shared machine: median %.1f ns)%n", w[w.length / 2]);
        System.out.printf("audit: unique %d, duplicated %d%n", audit.unique(), audit.duplicated());
        boolean pass = med <= targetNs;
        System.out.printf("criterion median CPU per message <= %.1f ns (ratio %.3f): %s%n", targetNs, med / targetNs,
                pass ? "PASS" : "FAIL");
        if (!pass) System.exit(1); // the verdict is the exit code (recording_cost.sh stops at the first failure)
    }
}
