package org.streambench.runner;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.*;

/** The Pravega driver file (OMB's fields and defaults), its checks against the workload, and the event format. */
class PravegaConfigTest {
    @Test
    void ombsOwnDriverFilesLoadUnchanged() {
        DriverConfig d = DriverConfig.load("src/test/resources/good/pravega.yaml");
        assertEquals(DriverConfig.Type.PRAVEGA, d.type);
        assertEquals("tcp://localhost:9090", d.controllerURI);
        assertEquals("examples", d.scopeName);
        assertFalse(d.enableConnectionPooling);
        assertTrue(d.includeTimestampInEvent);
        assertFalse(d.enableStreamAutoScaling, "eventsPerSecond without enableStreamAutoScaling: a fixed policy");
        assertEquals(10000, d.eventsPerSecond);
        assertFalse(d.enableTransaction);
        assertTrue(d.createScope);
        assertTrue(d.deleteStreams);
        assertEquals("pravega", d.echo.get("driverType").asText());
        DriverConfig x = DriverConfig.load("src/test/resources/good/pravega-exactly-once.yaml");
        assertTrue(x.enableTransaction);
        assertTrue(x.enableConnectionPooling);
        assertEquals(1, x.eventsPerTransaction, "eventPerTransaction (OMB's spelling in that file) is read");
    }

    @Test
    void autoScalingOnlyWhenAskedFor() throws IOException {
        DriverConfig fixed = DriverConfig.load("src/test/resources/good/pravega.yaml");
        PravegaDriverPolicy.check(fixed, 16, "FIXED_NUM_SEGMENTS", 16);
        Path t = Files.createTempFile("pv", ".yaml");
        Files.writeString(t, Files.readString(Path.of("src/test/resources/good/pravega.yaml"))
                .replace("enableStreamAutoScaling: False", "enableStreamAutoScaling: True"));
        DriverConfig auto = DriverConfig.load(t.toString());
        PravegaDriverPolicy.check(auto, 4, "BY_RATE_IN_EVENTS_PER_SEC", 4);
        Files.delete(t);
    }

    @Test
    void moreReadersThanSegmentsRunsWithAWarning() {
        // upstream OMB runs this shape (the readers without a segment stay idle); so does the runner, and says so
        Workload w = Workload.load("src/test/resources/good/workload.yaml");
        DriverConfig d = DriverConfig.load("src/test/resources/good/pravega.yaml");
        w.consumerPerSubscription = w.partitionsPerTopic + 1;
        java.util.List<String> warnings = d.checkAgainst(w);
        assertEquals(1, warnings.size(), warnings.toString());
        assertTrue(warnings.get(0).contains("1 reader(s) per group receive nothing and stay idle"), warnings.get(0));
        assertTrue(warnings.get(0).contains(w.file) && warnings.get(0).contains(d.file), warnings.get(0));
        w.consumerPerSubscription = w.partitionsPerTopic;
        assertTrue(d.checkAgainst(w).isEmpty());
    }

    @Test
    void clusterFileMustNameTheController() throws IOException {
        Workload w = Workload.load("src/test/resources/good/workload.yaml");
        DriverConfig d = DriverConfig.load("src/test/resources/good/pravega.yaml");
        Path c = Files.createTempFile("cluster", ".json");
        Files.writeString(c, "{\"system\": \"pravega\", \"pravega\": {\"controllerURI\": \"tcp://127.0.0.1:1\"}}");
        Main.Args a = Main.parse(new String[]{"--validate-only", "--workload", "w", "--driver", "d", "--cluster", c.toString()});
        ConfigException e = assertThrows(ConfigException.class, () -> Main.validate(a, w, d));
        assertTrue(e.getMessage().startsWith(c + ": field 'pravega.controllerUri'"), e.getMessage());
        Files.writeString(c, "{\"system\": \"pravega\", \"pravega\": {\"controllerUri\": \"127.0.0.1:1\"}}");
        e = assertThrows(ConfigException.class, () -> Main.validate(a, w, d));
        assertTrue(e.getMessage().startsWith(c + ": field 'pravega.controllerUri'"), e.getMessage());
        Files.writeString(c, "{\"system\": \"kafka\", \"pravega\": {\"controllerUri\": \"tcp://127.0.0.1:1\"}}");
        e = assertThrows(ConfigException.class, () -> Main.validate(a, w, d));
        assertTrue(e.getMessage().contains("field 'system'"), e.getMessage());
        Files.writeString(c, "{\"system\": \"pravega\", \"pravega\": {\"controllerUri\": \"tcp://127.0.0.1:1\"}}");
        Main.validate(a, w, d);
        Files.delete(c);
    }

    @Test
    void eventsCarryOmbsTimestampBeforeThePayload() {
        byte[] payload = new byte[100];
        MessageHeader.write(payload, 7, 42, 1, 2);
        var with = new PravegaDriver.EventSerializer(true);
        long before = System.currentTimeMillis();
        ByteBuffer b = with.serialize(payload);
        assertEquals(108, b.remaining());
        long ts = b.duplicate().getLong();
        assertTrue(ts >= before && ts <= System.currentTimeMillis() + 1, "OMB's ms timestamp first: " + ts);
        byte[] back = with.deserialize(b);
        assertArrayEquals(payload, back);
        assertEquals(42, MessageHeader.sequence(back));
        var without = new PravegaDriver.EventSerializer(false);
        ByteBuffer w = without.serialize(payload);
        assertEquals(100, w.remaining());
        assertArrayEquals(payload, without.deserialize(w));
    }
}
