package org.streambench.runner;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

/** omb-run: CLI entry point. Exit codes: 0 ok, 1 run failed, 2 bad input (no broker contacted), 3 deadline passed. */
public final class Main {
    public static final String VERSION = "0.1.0";

    static final String USAGE = "usage: omb-run --workload W.yaml --driver D.yaml [--cluster RUNDIR/cluster.json] --output OUT.json\n"
            + "               [--log LOG] [--process-index i --process-count n --start-at EPOCH_MS]\n"
            + "               [--duration-seconds S] [--warmup-seconds S] [--deadline-seconds S] [--barrier DIR [--barrier-coordinated]]\n"
            + "       omb-run --validate-only --workload W.yaml --driver D.yaml [--cluster C.json]\n"
            + "       omb-run --validate-only --pairs LIST [--cluster C.json]   (LIST: one 'WORKLOAD<TAB>DRIVER' per line)\n"
            + "       omb-merge --output OUT.json PART.json...";

    private Main() {}

    public static void main(String[] args) {
        int rc;
        try {
            rc = run(args);
        } catch (ConfigException e) {
            System.err.println("omb-run: error: " + e.getMessage());
            rc = 2;
        } catch (Throwable t) {
            Log.error("run failed: " + t, t);
            rc = Runner.timedOut ? 3 : 1;
        }
        System.err.flush();
        System.exit(rc);
    }

    static final class Args {
        String workload, driver, cluster, output, log, pairs;
        boolean validateOnly, barrierCoordinated;
        Integer index, count;
        Long startAt, duration, warmup, deadline;
        String barrier;
    }

    static Args parse(String[] args) {
        Args a = new Args();
        for (int i = 0; i < args.length; i++) {
            String k = args[i];
            if (k.equals("--validate-only")) { a.validateOnly = true; continue; }
            if (k.equals("--barrier-coordinated")) { a.barrierCoordinated = true; continue; }
            if (k.equals("-h") || k.equals("--help")) throw new ConfigException(USAGE);
            if (i + 1 >= args.length) throw new ConfigException("command line: option " + k + " needs a value\n" + USAGE);
            String v = args[++i];
            switch (k) {
                case "--workload": a.workload = v; break;
                case "--driver": a.driver = v; break;
                case "--cluster": a.cluster = v; break;
                case "--pairs": a.pairs = v; break;
                case "--output": a.output = v; break;
                case "--log": a.log = v; break;
                case "--process-index": a.index = (int) num(k, v, 0, 100_000); break;
                case "--process-count": a.count = (int) num(k, v, 1, 100_000); break;
                case "--start-at": a.startAt = num(k, v, 0, Long.MAX_VALUE); break;
                case "--duration-seconds": a.duration = num(k, v, 1, Long.MAX_VALUE); break;
                case "--warmup-seconds": a.warmup = num(k, v, 0, Long.MAX_VALUE); break;
                case "--deadline-seconds": a.deadline = num(k, v, 1, Long.MAX_VALUE); break;
                case "--barrier": case "--fanout-barrier": a.barrier = v; break;
                default: throw new ConfigException("command line: unknown option " + k + "\n" + USAGE);
            }
        }
        if (a.pairs != null) {
            if (!a.validateOnly) throw new ConfigException("command line: --pairs goes with --validate-only\n" + USAGE);
            if (a.workload != null || a.driver != null)
                throw new ConfigException("command line: --pairs replaces --workload and --driver\n" + USAGE);
            return a;
        }
        if (a.workload == null) throw new ConfigException("command line: --workload is required\n" + USAGE);
        if (a.driver == null) throw new ConfigException("command line: --driver is required\n" + USAGE);
        if (!a.validateOnly && a.output == null) throw new ConfigException("command line: --output is required\n" + USAGE);
        if ((a.index == null) != (a.count == null))
            throw new ConfigException("command line: --process-index and --process-count go together");
        if (a.count != null && a.index >= a.count)
            throw new ConfigException("command line: --process-index must be < --process-count");
        if (a.count != null && a.count > 1 && a.startAt == null)
            throw new ConfigException("command line: --start-at is required with --process-count > 1");
        return a;
    }

    private static long num(String k, String v, long min, long max) {
        long x;
        try {
            x = Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new ConfigException("command line: " + k + " expects an integer, got \"" + v + "\"");
        }
        if (x < min || x > max) throw new ConfigException("command line: " + k + " must be between " + min + " and " + max);
        return x;
    }

    /** A command-line file's text; a missing or unreadable file is a ConfigException naming it. */
    static String readText(String file) {
        try {
            return Files.readString(Path.of(file));
        } catch (NoSuchFileException e) {
            throw new ConfigException(file + ": file not found");
        } catch (IOException e) {
            throw new ConfigException(file + ": cannot read: " + e.getMessage());
        }
    }

    /** Everything checked before any connection. */
    static Runner.Options validate(Args a, Workload w, DriverConfig d) {
        Runner.Options o = new Runner.Options();
        o.warnings.addAll(d.checkAgainst(w));
        if (a.cluster != null) {
            String text = readText(a.cluster);
            JsonNode c;
            try {
                c = Fields.JSON.readTree(text);
            } catch (IOException e) {
                throw new ConfigException(a.cluster + ": not valid JSON: " + e.getMessage().split("\n")[0]);
            }
            if (c == null || !c.isObject()) throw new ConfigException(a.cluster + ": top level must be an object");
            if (d.type == DriverConfig.Type.KAFKA && !c.at("/kafka/bootstrapServers").isTextual())
                throw new ConfigException(a.cluster, "kafka.bootstrapServers", "missing or not a string (driver " + d.file + " is Kafka)");
            if (d.type == DriverConfig.Type.PULSAR && !c.at("/pulsar/serviceUrl").isTextual())
                throw new ConfigException(a.cluster, "pulsar.serviceUrl", "missing or not a string (driver " + d.file + " is Pulsar)");
            if (d.type == DriverConfig.Type.PULSAR && !c.at("/pulsar/httpUrl").isTextual())
                throw new ConfigException(a.cluster, "pulsar.httpUrl", "missing or not a string (driver " + d.file + " is Pulsar)");
            if (d.type == DriverConfig.Type.PRAVEGA && !c.at("/pravega/controllerUri").isTextual())
                throw new ConfigException(a.cluster, "pravega.controllerUri", "missing or not a string (driver " + d.file + " is Pravega)");
            if (d.type == DriverConfig.Type.PRAVEGA)
                DriverConfig.checkControllerURI(new Fields(a.cluster, (ObjectNode) c.get("pravega"), "pravega"), "controllerUri",
                        c.at("/pravega/controllerUri").asText());
            JsonNode sys = c.get("system");
            if (sys != null && sys.isTextual() && !sys.asText().equalsIgnoreCase(d.type.name()))
                throw new ConfigException(a.cluster, "system", "is \"" + sys.asText() + "\" but driver " + d.file + " is " + d.type.name().toLowerCase());
            o.cluster = c;
        } else {
            if (d.type == DriverConfig.Type.KAFKA && d.producerConfig.getProperty("bootstrap.servers") == null
                    && d.commonConfig.getProperty("bootstrap.servers") == null)
                throw new ConfigException(d.file, "commonConfig.bootstrap.servers", "missing, and no --cluster given");
            if (d.type == DriverConfig.Type.PULSAR && (d.serviceUrl == null || d.httpUrl == null))
                throw new ConfigException(d.file, d.serviceUrl == null ? "client.serviceUrl" : "client.httpUrl", "missing, and no --cluster given");
            if (d.type == DriverConfig.Type.PRAVEGA && d.controllerURI == null)
                throw new ConfigException(d.file, "client.controllerURI", "missing, and no --cluster given");
        }
        if (a.count != null) { o.index = a.index; o.count = a.count; }
        // the open-file check is about this process: a validation may run elsewhere than the run (aws client hosts)
        FanOut.check(w, d, o.count, !a.validateOnly);
        if (a.barrier != null) {
            if (o.count < 2) throw new ConfigException("command line: --barrier goes with --process-count > 1");
            o.barrier = a.barrier;
        }
        if (a.barrierCoordinated && a.barrier == null)
            throw new ConfigException("command line: --barrier-coordinated goes with --barrier DIR");
        o.barrierCoordinated = a.barrierCoordinated;
        o.startAt = a.startAt;
        o.durationSeconds = a.duration;
        o.warmupSeconds = a.warmup;
        o.deadlineSeconds = a.deadline;
        if (o.count > 1) {
            if (w.producerRate == 0) throw new ConfigException(w.file, "producerRate", "0 (rate discovery) is not supported with --process-count > 1");
            if (w.backlogBytes > 0) throw new ConfigException(w.file, "consumerBacklogSizeGB", "backlog mode is not supported with --process-count > 1");
            if (w.mixed()) throw new ConfigException(w.file, "x-streambench.catchUpSubscriptions", "a mixed workload is not supported with --process-count > 1");
            if (w.totalProducers() < o.count && !w.fanOut()) throw new ConfigException(w.file, "producersPerTopic",
                    "topics x producersPerTopic = " + w.totalProducers() + " is fewer than --process-count " + o.count);
        }
        return o;
    }

    static int run(String[] args) throws Exception {
        Args a = parse(args);
        // logging of the client libraries: to the log file if given, else warnings only on stderr
        if (a.log != null) {
            Path lp = Path.of(a.log).toAbsolutePath();
            if (lp.getParent() != null) Files.createDirectories(lp.getParent());
            System.setProperty("omb.log", lp.toString());
            System.setProperty("log4j2.configurationFile", "log4j2-file.xml");
            Log.toFile();
        } else {
            System.setProperty("log4j2.configurationFile", "log4j2-stderr.xml");
        }
        ClientLogCounter.install();
        if (a.pairs != null) return validatePairs(a);
        Workload w = Workload.load(a.workload);
        DriverConfig d = DriverConfig.load(a.driver);
        Runner.Options o = validate(a, w, d);
        if (a.validateOnly) {
            System.out.println("ok: " + a.workload + " (" + (w.name == null ? "" : w.name) + ") with " + a.driver + " ("
                    + d.type.name().toLowerCase() + ")");
            for (String warning : o.warnings) System.out.println("warning: " + warning);
            return 0;
        }
        Path out = Path.of(a.output).toAbsolutePath();
        if (out.getParent() != null) Files.createDirectories(out.getParent());
        Runner r = new Runner(w, d, o);
        ObjectNode result = r.run();
        writeAtomically(out, result);
        Log.info("result written to " + out);
        return 0;
    }

    /**
     * Validates many workload/driver pairs in one JVM (a test corpus of hundreds of pairs would otherwise start
     * hundreds of JVMs). Prints one tab-separated line per pair, in input order: "ok, workload, driver" or
     * "error, workload, driver, message" (message on one line). Exit 0 when every pair is valid, 2 otherwise.
     */
    static int validatePairs(Args a) {
        List<String> lines = readText(a.pairs).lines().toList();
        int bad = 0, n = 0;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            if (line.isBlank() || line.startsWith("#")) continue;
            String[] f = line.split("\t");
            if (f.length != 2 || f[0].isBlank() || f[1].isBlank())
                throw new ConfigException(a.pairs + ": line " + (i + 1) + ": expected 'WORKLOAD<TAB>DRIVER'");
            n++;
            Args one = new Args();
            one.workload = f[0]; one.driver = f[1]; one.cluster = a.cluster; one.validateOnly = true;
            try {
                Runner.Options o = validate(one, Workload.load(f[0]), DriverConfig.load(f[1]));
                System.out.println("ok\t" + f[0] + "\t" + f[1] + (o.warnings.isEmpty() ? "" : "\twarning: " + String.join("; ", o.warnings)));
            } catch (ConfigException e) {
                bad++;
                System.out.println("error\t" + f[0] + "\t" + f[1] + "\t" + e.getMessage().replace('\n', ' '));
            }
        }
        System.out.flush();
        if (bad > 0) System.err.println("omb-run: " + bad + " of " + n + " pairs are invalid");
        return bad > 0 ? 2 : 0;
    }

    static void writeAtomically(Path out, JsonNode json) throws IOException {
        Path tmp = out.resolveSibling(out.getFileName() + ".tmp-" + ProcessHandle.current().pid());
        try {
            Files.write(tmp, Fields.JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(json));
            try (var ch = java.nio.channels.FileChannel.open(tmp, java.nio.file.StandardOpenOption.WRITE)) { ch.force(true); }
            Files.move(tmp, out, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    static ObjectNode runnerInfo() {
        ObjectNode n = Fields.JSON.createObjectNode();
        n.put("name", "omb-runner");
        n.put("version", VERSION);
        String rev = System.getProperty("streambench.gitRevision");
        n.put("gitRevision", rev == null || rev.isEmpty() ? null : rev);
        String dirty = System.getProperty("streambench.gitDirty");
        if (dirty == null || dirty.isEmpty()) n.putNull("gitDirty"); else n.put("gitDirty", Boolean.parseBoolean(dirty));
        n.put("java", System.getProperty("java.version"));
        String host;
        try { host = java.net.InetAddress.getLocalHost().getHostName(); } catch (IOException e) { host = null; }
        n.put("host", host);
        return n;
    }

    static List<String> rest(String[] args, int from) {
        List<String> l = new ArrayList<>();
        for (int i = from; i < args.length; i++) l.add(args[i]);
        return l;
    }
}
