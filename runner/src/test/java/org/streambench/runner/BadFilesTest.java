package org.streambench.runner;

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.*;

/** Every file under src/test/resources/bad/ must be rejected with an error naming the file and the expected field. */
class BadFilesTest {
    static final Path BAD = Path.of("src/test/resources/bad");

    @TestFactory
    Stream<DynamicTest> everyBadFileIsRejectedWithItsField() throws IOException {
        List<Path> files;
        try (Stream<Path> s = Files.list(BAD)) {
            files = s.filter(p -> p.toString().endsWith(".yaml")).sorted().collect(Collectors.toList());
        }
        assertTrue(files.size() >= 40, "corpus too small: " + files.size());
        return files.stream().map(p -> DynamicTest.dynamicTest(p.getFileName().toString(), () -> {
            String first = Files.readAllLines(p).get(0);
            assertTrue(first.startsWith("# expect: "), p + ": first line must be '# expect: <text>'");
            String expected = first.substring("# expect: ".length()).trim();
            String name = p.getFileName().toString();
            ConfigException e = assertThrows(ConfigException.class, () -> {
                if (name.startsWith("workload-")) Workload.load(p.toString());
                else DriverConfig.load(p.toString());
            });
            String msg = e.getMessage();
            assertTrue(msg.startsWith(p.toString() + ":"), "error must start with the file name: " + msg);
            assertTrue(msg.contains(expected), "error must mention '" + expected + "': " + msg);
            assertFalse(msg.contains("\n"), "one-line error expected: " + msg);
        }));
    }

    @Test
    void goodFilesLoadWithOmbDefaults() {
        Workload w = Workload.load("src/test/resources/good/workload.yaml");
        assertEquals(Workload.KeyDistributor.NO_KEY, w.keyDistributor);
        assertEquals(1, w.warmupDurationMinutes, "OMB default warm-up is 1 minute");
        assertEquals(1.0, w.backlogDrainRatio);
        assertEquals(0, w.consumerBacklogSizeGB);
        assertEquals(60, w.testSeconds());
        assertEquals(60, w.warmupSeconds());
        assertEquals(17, w.echo.size(), "every OMB workload field echoed: " + w.echo);
        DriverConfig k = DriverConfig.load("src/test/resources/good/kafka.yaml");
        assertEquals(DriverConfig.Type.KAFKA, k.type);
        assertEquals(3, k.replicationFactor);
        assertEquals("2", k.topicConfig.getProperty("min.insync.replicas"));
        assertEquals("all", k.producerConfig.getProperty("acks"));
        DriverConfig p = DriverConfig.load("src/test/resources/good/pulsar.yaml");
        assertEquals(DriverConfig.Type.PULSAR, p.type);
        assertEquals(3, p.ensembleSize);
        assertEquals(2, p.ackQuorum);
        assertEquals(256, p.clientMemoryLimitMB);
        assertEquals("Failover", p.subscriptionType);
        assertEquals("pulsar", p.echo.get("driverType").asText());
    }

    @Test
    void extensionDurationsOverrideMinutes() throws IOException {
        Path t = Files.createTempFile("wl", ".yaml");
        Files.writeString(t, Files.readString(Path.of("src/test/resources/good/workload.yaml"))
                + "x-streambench:\n  testDurationSeconds: 20\n  warmupDurationSeconds: 0\n  consumerBacklogSizeBytes: 1048576\n");
        Workload w = Workload.load(t.toString());
        assertEquals(20, w.testSeconds());
        assertEquals(0, w.warmupSeconds());
        assertEquals(1048576, w.backlogBytes);
        Files.delete(t);
    }

    @Test
    void projectWorkloadFilesAllLoad() throws IOException {
        Path dir = Path.of("../workloads/omb");
        if (!Files.isDirectory(dir)) return; // the runner alone; nothing to check
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : s.filter(x -> x.toString().endsWith(".yaml")).collect(Collectors.toList())) {
                // payload files are relative to the repository root, as OMB resolves them against the cwd
                Workload w;
                try {
                    w = Workload.load(p.toString());
                } catch (ConfigException e) {
                    if (e.getMessage().contains("payloadFile")) continue;
                    throw e;
                }
                assertTrue(w.topics >= 1, p.toString());
            }
        }
    }

    @Test
    void exclusiveSubscriptionWithTwoConsumersIsRejected() throws IOException {
        Path t = Files.createTempFile("drv", ".yaml");
        Files.writeString(t, Files.readString(Path.of("src/test/resources/good/pulsar.yaml")) + "  subscriptionType: Exclusive\n");
        DriverConfig d = DriverConfig.load(t.toString());
        Path wf = Files.createTempFile("wl", ".yaml");
        Files.writeString(wf, Files.readString(Path.of("src/test/resources/good/workload.yaml")).replace("consumerPerSubscription: 1", "consumerPerSubscription: 2"));
        Workload w = Workload.load(wf.toString());
        ConfigException e = assertThrows(ConfigException.class, () -> d.checkAgainst(w));
        assertTrue(e.getMessage().contains("consumer.subscriptionType"), e.getMessage());
        Files.delete(t);
        Files.delete(wf);
    }
}
