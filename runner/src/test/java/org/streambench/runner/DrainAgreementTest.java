package org.streambench.runner;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The drain of a run split over several processes: drained once the unique messages of every subscription, summed
 * over the processes, reach the acknowledged sends of all of them (not when one process has heard nothing for a
 * while: its consumers may hold few of the subscription's partitions and fall quiet while the others still read).
 */
class DrainAgreementTest {
    @Test
    void drainedOnlyWhenEverySubscriptionsSumReachesEveryProcesssAcknowledgedSends() {
        // two processes, each acknowledged 5 000; one subscription whose partitions part 0 holds fewer of
        String p0 = "acked 5000\nsub s-0 4090\n", p1 = "acked 5000\nsub s-0 5091\n";
        assertFalse(Barrier.drainAgreed(Arrays.asList(p0, p1)), "9 181 of 10 000 received: not drained");
        assertTrue(Barrier.drainAgreed(Arrays.asList("acked 5000\nsub s-0 4909\n", p1)));
        // a process that has not written yet, or whose state is cut short, holds the drain
        assertFalse(Barrier.drainAgreed(Arrays.asList(null, p1)));
        assertFalse(Barrier.drainAgreed(Arrays.asList("", p1)));
        // every subscription on its own: a second one behind holds it
        assertFalse(Barrier.drainAgreed(List.of("acked 10\nsub a 10\nsub b 4\n", "acked 0\nsub a 0\nsub b 5\n")));
        assertTrue(Barrier.drainAgreed(List.of("acked 10\nsub a 10\nsub b 4\n", "acked 0\nsub a 0\nsub b 6\n")));
        // a subscription only one process audits (the other's consumers of it never connected) counts where it is
        assertTrue(Barrier.drainAgreed(List.of("acked 6\nsub a 10\n", "acked 4\n")));
    }

    @Test
    void subscriptionsWholeInOneProcessAreOneLineAndHoldTheDrainByTheirFewest() {
        // study 003's layout: every subscription one consumer's, each whole in one process (here 2 of 3 subscriptions
        // in process 0, 1 in process 1); only their fewest unique messages matter
        assertFalse(Barrier.drainAgreed(List.of("acked 6\nwhole 2 9\n", "acked 4\nwhole 1 10\n")),
                "one of process 0's subscriptions has 9 of 10");
        assertTrue(Barrier.drainAgreed(List.of("acked 6\nwhole 2 10\n", "acked 4\nwhole 1 10\n")));
        // whole and split together (a shared subscription over both processes beside them)
        assertFalse(Barrier.drainAgreed(List.of("acked 6\nwhole 2 10\nsub s 5\n", "acked 4\nsub s 4\n")));
        assertTrue(Barrier.drainAgreed(List.of("acked 6\nwhole 2 10\nsub s 5\n", "acked 4\nsub s 5\n")));
        // a process without subscriptions (all left out) still holds the drain until it has written its acks
        assertFalse(Barrier.drainAgreed(Arrays.asList("acked 6\nwhole 3 10\n", null)));
        assertTrue(Barrier.drainAgreed(List.of("acked 6\nwhole 3 10\n", "acked 4\n")));
    }

    @Test
    void theStateNamesOnlyTheSubscriptionsSplitOverProcesses() {
        Audit whole1 = new Audit("f-0", 1, 1), whole2 = new Audit("f-2", 1, 1), shared = new Audit("s", 1, 1),
                elsewhere = new Audit("f-1", 1, 1);
        for (long seq = 0; seq < 5; seq++) { whole1.record(0, seq, 0); shared.record(0, seq, 0); }
        for (long seq = 0; seq < 3; seq++) whole2.record(0, seq, 0);
        // 1 topic: f-* have one consumer each (two of them here), s has two, one of them here
        assertEquals("acked 7\nwhole 2 3\n",
                Barrier.drainState(7, List.of(whole1, elsewhere, whole2), Map.of("f-0", 1, "f-2", 1), 1));
        assertEquals("acked 7\nsub s 5\n", Barrier.drainState(7, List.of(shared), Map.of("s", 1), 2));
        assertEquals("acked 0\n", Barrier.drainState(0, List.of(elsewhere), Map.of(), 1));
        // 100 000 subscriptions of one consumer each, half of them here: still two lines
        List<Audit> many = new java.util.ArrayList<>();
        Map<String, Integer> here = new java.util.HashMap<>();
        for (int i = 0; i < 100_000; i++) {
            many.add(new Audit("f-" + i, 1, 1));
            if (i % 2 == 0) here.put("f-" + i, 1);
        }
        assertEquals("acked 0\nwhole 50000 0\n", Barrier.drainState(0, many, here, 1));
    }

    @Test
    void theStatesAreFilesOfTheBarrierDirectory(@TempDir Path dir) throws Exception {
        Audit a = new Audit("s-0", 2, 4);
        for (long seq = 0; seq < 3; seq++) a.record(0, seq, 0);
        Map<String, Integer> one = Map.of("s-0", 1);  // one of the subscription's two consumers in each process
        Barrier.writeDrain(dir.toString(), 0, 3, List.of(a), one, 2);
        assertEquals("acked 3\nsub s-0 3\n", Files.readString(dir.resolve("drain-0")));
        assertFalse(Barrier.drainAgreed(dir.toString(), 2), "process 1 has not written");
        Barrier.writeDrain(dir.toString(), 1, 0, List.of(new Audit("s-0", 2, 4)), one, 2);
        assertTrue(Barrier.drainAgreed(dir.toString(), 2));
        Barrier.writeDrain(dir.toString(), 1, 1, List.of(new Audit("s-0", 2, 4)), one, 2);
        assertFalse(Barrier.drainAgreed(dir.toString(), 2), "one more acknowledged, not yet received");
        assertFalse(Files.list(dir).anyMatch(p -> p.getFileName().toString().endsWith(".tmp")));
    }
}
