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

    // ---- the drain the processes agree on (several processes, --barrier) ----

    /**
     * This process's drain state, {@code drain-<index>} in the barrier directory (written aside, then renamed): its
     * acknowledged sends ({@code acked N}); for the subscriptions all of whose consumers are this process's, one line
     * {@code whole K MIN} (K of them, the fewest unique messages any of them received: no other process adds to
     * those); for a subscription whose consumers are split over the processes, {@code sub NAME N} (the unique messages
     * its consumers here received). A subscription none of whose consumers is here adds nothing and is not named. So
     * a fan-out part's state stays a few lines however many subscriptions it holds (study 003's N-subscription layout:
     * every subscription is one consumer's, whole in one process). A process alone cannot tell its drain: the
     * consumers of one subscription may be spread over the processes, so what it should have received depends on the
     * others' acknowledged sends. {@code here}: consumers of each subscription this process was given (by name);
     * {@code perSubscription}: consumers of one subscription over all processes.
     */
    static void writeDrain(String dir, int index, long acked, java.util.List<Audit> audits,
                           java.util.Map<String, Integer> here, int perSubscription) throws java.io.IOException {
        Path d = Path.of(dir);
        Files.createDirectories(d);
        Path tmp = d.resolve(".drain-" + index + ".tmp");
        Files.writeString(tmp, drainState(acked, audits, here, perSubscription));
        Files.move(tmp, d.resolve("drain-" + index), StandardCopyOption.ATOMIC_MOVE);
    }

    /** The text of a drain state (writeDrain). */
    static String drainState(long acked, java.util.List<Audit> audits, java.util.Map<String, Integer> here,
                             int perSubscription) {
        StringBuilder b = new StringBuilder("acked ").append(acked).append('\n');
        StringBuilder split = new StringBuilder();
        long min = Long.MAX_VALUE;
        int whole = 0;
        for (Audit a : audits) {
            int mine = here.getOrDefault(a.name, 0);
            if (mine <= 0) continue;
            if (mine >= perSubscription) { whole++; min = Math.min(min, a.unique()); }
            else split.append("sub ").append(a.name).append(' ').append(a.unique()).append('\n');
        }
        if (whole > 0) b.append("whole ").append(whole).append(' ').append(min).append('\n');
        return b.append(split).toString();
    }

    /**
     * Whether every process has written its drain state, every subscription whole in one process reached the
     * acknowledged sends of all processes ({@code whole}'s fewest), and, for every subscription split over them, the
     * unique messages received over all processes reach the acknowledged sends of all processes (the texts of
     * {@code drain-0 .. drain-<count-1>}; null where one is missing).
     */
    static boolean drainAgreed(java.util.List<String> states) {
        long acked = 0;
        java.util.Map<String, Long> received = new java.util.HashMap<>();
        java.util.List<Long> wholeMins = new java.util.ArrayList<>();
        for (String st : states) {
            if (st == null) return false;
            boolean sawAcked = false;
            for (String line : st.split("\n")) {
                String[] f = line.trim().split(" ");
                if (f.length == 2 && f[0].equals("acked")) { acked += Long.parseLong(f[1]); sawAcked = true; }
                else if (f.length == 3 && f[0].equals("sub")) received.merge(f[1], Long.parseLong(f[2]), Long::sum);
                else if (f.length == 3 && f[0].equals("whole")) wholeMins.add(Long.parseLong(f[2]));
            }
            if (!sawAcked) return false; // a state cut short: not yet
        }
        for (long r : received.values()) if (r < acked) return false;
        for (long r : wholeMins) if (r < acked) return false;
        return true;
    }

    /** drainAgreed over the {@code drain-<i>} files of a directory every process writes to (one host). */
    static boolean drainAgreed(String dir, int count) throws java.io.IOException {
        java.util.List<String> states = new java.util.ArrayList<>();
        for (int i = 0; i < count; i++) {
            Path p = Path.of(dir, "drain-" + i);
            states.add(Files.exists(p) ? Files.readString(p) : null);
        }
        return drainAgreed(states);
    }
}
