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
 */
final class Barrier {
    private Barrier() {}

    static long await(String dir, int index, int count, long leadMs, long deadlineMs, BooleanSupplier abort) throws Exception {
        Path d = Path.of(dir);
        Files.createDirectories(d);
        Path tmp = d.resolve(".ready-" + index + ".tmp"), mine = d.resolve("ready-" + index);
        Files.writeString(tmp, Long.toString(System.currentTimeMillis()));
        Files.move(tmp, mine, StandardCopyOption.ATOMIC_MOVE);
        long deadline = System.currentTimeMillis() + deadlineMs;
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
