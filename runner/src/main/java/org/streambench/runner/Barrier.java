package org.streambench.runner;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.function.BooleanSupplier;

/**
 * Start agreement of the runner processes of one run (--process-count n, --barrier DIR): each process writes
 * {@code ready-<index>} (its epoch ms) into a shared directory once its set-up is done and waits until all n are
 * there; all then start at the same moment, {@code leadMs} after the last one was ready. Without it the processes
 * need a --start-at far enough ahead to cover the slowest JVM start and set-up, which is time spent idle.
 *
 * <p>Coordinated (--barrier-coordinated), for processes on hosts that share no file system: each process writes its
 * {@code ready-<index>} into its own host's directory and waits for a file {@code go} there holding the start time
 * (epoch ms), which a coordinator (testbeds/runner.py, over ssh) writes on every host once it has seen every process
 * ready. The hosts' clocks must agree, as for --start-at.
 */
final class Barrier {
    private Barrier() {}

    static long await(String dir, int index, int count, long leadMs, long deadlineMs, BooleanSupplier abort) throws Exception {
        return await(dir, index, count, leadMs, deadlineMs, abort, false);
    }

    static long await(String dir, int index, int count, long leadMs, long deadlineMs, BooleanSupplier abort,
                      boolean coordinated) throws Exception {
        Path d = Path.of(dir);
        Files.createDirectories(d);
        Path tmp = d.resolve(".ready-" + index + ".tmp"), mine = d.resolve("ready-" + index);
        Files.writeString(tmp, Long.toString(System.currentTimeMillis()));
        Files.move(tmp, mine, StandardCopyOption.ATOMIC_MOVE);
        long deadline = System.currentTimeMillis() + deadlineMs;
        if (coordinated) {
            Path go = d.resolve("go");
            while (!Files.exists(go)) {
                if (abort.getAsBoolean()) throw new IllegalStateException("aborted by signal");
                if (System.currentTimeMillis() > deadline)
                    throw new IllegalStateException("barrier: no start time from the coordinator in " + go + " after "
                            + deadlineMs / 1000 + " s");
                Thread.sleep(20);
            }
            String text = Files.readString(go).trim();
            long at;
            try {
                at = Long.parseLong(text);
            } catch (NumberFormatException e) {
                throw new IllegalStateException("barrier: " + go + " holds \"" + text + "\", not an epoch ms");
            }
            Log.info("barrier: the coordinator saw all " + count + " runner processes ready; producing starts at " + at);
            return at;
        }
        while (true) {
            if (abort.getAsBoolean()) throw new IllegalStateException("aborted by signal");
            long last = 0;
            int seen = 0;
            for (int i = 0; i < count; i++) {
                Path p = d.resolve("ready-" + i);
                if (!Files.exists(p)) break;
                seen++;
                last = Math.max(last, Long.parseLong(Files.readString(p).trim()));
            }
            if (seen == count) {
                Log.info("barrier: all " + count + " runner processes ready; producing starts at " + (last + leadMs));
                return last + leadMs;
            }
            if (System.currentTimeMillis() > deadline)
                throw new IllegalStateException("barrier: " + seen + " of " + count + " runner processes ready in " + dir
                        + " after " + deadlineMs / 1000 + " s");
            Thread.sleep(50);
        }
    }
}
