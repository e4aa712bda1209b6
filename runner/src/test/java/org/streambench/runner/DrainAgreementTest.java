package org.streambench.runner;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

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
    void theStatesAreFilesOfTheBarrierDirectory(@TempDir Path dir) throws Exception {
        Audit a = new Audit("s-0", 2, 4);
        for (long seq = 0; seq < 3; seq++) a.record(0, seq, 0);
        Barrier.writeDrain(dir.toString(), 0, 3, List.of(a));
        assertEquals("acked 3\nsub s-0 3\n", Files.readString(dir.resolve("drain-0")));
        assertFalse(Barrier.drainAgreed(dir.toString(), 2), "process 1 has not written");
        Barrier.writeDrain(dir.toString(), 1, 0, List.of(new Audit("s-0", 2, 4)));
        assertTrue(Barrier.drainAgreed(dir.toString(), 2));
        Barrier.writeDrain(dir.toString(), 1, 1, List.of(new Audit("s-0", 2, 4)));
        assertFalse(Barrier.drainAgreed(dir.toString(), 2), "one more acknowledged, not yet received");
        assertFalse(Files.list(dir).anyMatch(p -> p.getFileName().toString().endsWith(".tmp")));
    }
}
