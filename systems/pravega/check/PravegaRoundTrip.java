import io.pravega.client.ClientConfig;
import io.pravega.client.EventStreamClientFactory;
import io.pravega.client.admin.ReaderGroupManager;
import io.pravega.client.admin.StreamManager;
import io.pravega.client.stream.EventRead;
import io.pravega.client.stream.EventStreamReader;
import io.pravega.client.stream.EventStreamWriter;
import io.pravega.client.stream.EventWriterConfig;
import io.pravega.client.stream.ReaderConfig;
import io.pravega.client.stream.ReaderGroupConfig;
import io.pravega.client.stream.ScalingPolicy;
import io.pravega.client.stream.Stream;
import io.pravega.client.stream.StreamConfiguration;
import io.pravega.client.stream.impl.UTF8StringSerializer;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A functional check of a running Pravega cluster (systems/tests/test_integration.py), run as a Java source file:
 *   java -cp '<dist>/libs/*' PravegaRoundTrip.java CONTROLLER_URI SCOPE STREAM SEGMENTS EVENTS KEYS [pause-at-half]
 * Creates the scope and a stream of SEGMENTS fixed segments, writes EVENTS events "<seq>" with routing keys k0..k{KEYS-1}
 * (seq counts per key), waits for every acknowledgement, then reads them back with one reader and prints each event
 * as "<key>\t<seq>" on stdout, then "done <n>". Exit 1 on any error. With pause-at-half it prints "half" once half
 * of the events are handed to the writer (not yet acknowledged) and waits for a line on stdin before it writes the
 * rest: the test kills a node there.
 */
public class PravegaRoundTrip {
    public static void main(String[] args) throws Exception {
        URI controller = URI.create(args[0]);
        String scope = args[1], stream = args[2];
        int segments = Integer.parseInt(args[3]), events = Integer.parseInt(args[4]), keys = Integer.parseInt(args[5]);
        boolean pause = args.length > 6 && args[6].equals("pause-at-half");
        ClientConfig cc = ClientConfig.builder().controllerURI(controller).build();
        try (StreamManager sm = StreamManager.create(cc)) {
            sm.createScope(scope);
            sm.createStream(scope, stream, StreamConfiguration.builder()
                    .scalingPolicy(ScalingPolicy.fixed(segments)).build());
        }
        UTF8StringSerializer ser = new UTF8StringSerializer();
        try (EventStreamClientFactory f = EventStreamClientFactory.withScope(scope, cc)) {
            // the payload carries its key: the reader sees the event, not its routing key
            try (EventStreamWriter<String> w = f.createEventWriter(stream, ser, EventWriterConfig.builder().build())) {
                int[] counters = new int[keys];
                List<CompletableFuture<Void>> acks = new ArrayList<>(events);
                for (int i = 0; i < events; i++) {
                    if (pause && i == events / 2) {
                        System.out.println("half");
                        System.out.flush();
                        if (new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine() == null) {
                            throw new IllegalStateException("stdin closed at half");
                        }
                    }
                    int k = i % keys;
                    acks.add(w.writeEvent("k" + k, "k" + k + "\t" + counters[k]++));
                }
                w.flush();
                CompletableFuture.allOf(acks.toArray(new CompletableFuture[0])).join();
            }
            try (ReaderGroupManager rgm = ReaderGroupManager.withScope(scope, cc)) {
                rgm.createReaderGroup("rg", ReaderGroupConfig.builder().stream(Stream.of(scope, stream)).build());
                try (EventStreamReader<String> r = f.createReader("reader-1", "rg", ser, ReaderConfig.builder().build())) {
                    int got = 0;
                    long deadline = System.currentTimeMillis() + 90_000;
                    StringBuilder out = new StringBuilder();
                    while (got < events && System.currentTimeMillis() < deadline) {
                        EventRead<String> e = r.readNextEvent(1000);
                        if (e.getEvent() != null) {
                            out.append(e.getEvent()).append('\n');
                            got++;
                        }
                    }
                    System.out.print(out);
                    System.out.println("done " + got);
                }
            }
        }
        System.exit(0);
    }
}
