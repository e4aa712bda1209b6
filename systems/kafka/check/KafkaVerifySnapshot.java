// What a Kafka cluster answers to the verification of systems/kafka.py, from the host this runs on: run as a source
// file on a server host with the distribution's classpath (testbeds/cluster.py, over ssh), for a controller that has
// no route to the brokers (an EC2 fleet seen from a laptop; the EC2-like lab). It does what systems/kafka.py
// `snapshot` does with confluent-kafka on this machine: wait for the brokers, read each broker's configuration,
// create the verification topic once, wait until every partition has a full in-sync replica set, read its
// configuration. Prints one line "SNAPSHOT <json>" ({"brokers": {id: {key: value}}, "topic": {"replicas": [..],
// "isr": [..], "config": {key: value}}}); on failure one line "kafka: ..." on stderr and exit 3.
//
//   java -cp 'DIST/libs/*' KafkaVerifySnapshot.java BOOTSTRAP NODES TOPIC RF CREATE(true|false) TIMEOUT_S
//        BROKER_KEYS(comma-separated) TOPIC_KEYS(comma-separated) [TOPIC_CONFIG_KEY=VALUE ...]

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.TopicExistsException;

public class KafkaVerifySnapshot {
    static String q(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static String obj(Map<String, String> m) {
        List<String> parts = new ArrayList<>();
        m.forEach((k, v) -> parts.add(q(k) + ": " + q(v)));
        return "{" + String.join(", ", parts) + "}";
    }

    static Map<String, String> pick(Config cfg, List<String> keys) {
        Map<String, String> out = new LinkedHashMap<>();
        for (String k : keys) {
            ConfigEntry e = cfg.get(k);
            out.put(k, e == null ? null : e.value());
        }
        return out;
    }

    static List<String> split(String s) {
        return s.isEmpty() ? List.of() : Arrays.asList(s.split(","));
    }

    static void fail(String msg) {
        System.err.println("kafka: " + msg);
        System.exit(3);
    }

    public static void main(String[] a) throws Exception {
        if (a.length < 8) fail("usage: BOOTSTRAP NODES TOPIC RF CREATE TIMEOUT_S BROKER_KEYS TOPIC_KEYS [K=V ...]");
        String bootstrap = a[0], topic = a[2];
        int nodes = Integer.parseInt(a[1]), rf = Integer.parseInt(a[3]);
        boolean create = Boolean.parseBoolean(a[4]);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.parseLong(a[5]));
        List<String> brokerKeys = split(a[6]), topicKeys = split(a[7]);
        Map<String, String> topicConfig = new LinkedHashMap<>();
        for (int i = 8; i < a.length; i++) {
            int eq = a[i].indexOf('=');
            topicConfig.put(a[i].substring(0, eq), a[i].substring(eq + 1));
        }
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        try (Admin admin = Admin.create(p)) {
            List<Node> brokers = List.of();
            String err = "no answer";
            while (true) {
                try {
                    brokers = new ArrayList<>(admin.describeCluster().nodes().get(10, TimeUnit.SECONDS));
                    if (brokers.size() == nodes) break;
                    err = brokers.size() + " of " + nodes + " brokers registered";
                } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                    err = String.valueOf(e.getCause() != null ? e.getCause() : e);
                }
                if (System.nanoTime() > deadline) fail("cluster not ready at " + bootstrap + ": " + err);
                Thread.sleep(500);
            }
            Map<String, String> brokerJson = new TreeMap<>();
            for (Node n : brokers) {
                ConfigResource r = new ConfigResource(ConfigResource.Type.BROKER, n.idString());
                Config cfg = admin.describeConfigs(List.of(r)).all().get(30, TimeUnit.SECONDS).get(r);
                brokerJson.put(n.idString(), obj(pick(cfg, brokerKeys)));
            }
            if (create && !admin.listTopics().names().get(30, TimeUnit.SECONDS).contains(topic)) {
                try {
                    admin.createTopics(List.of(new NewTopic(topic, nodes, (short) rf).configs(topicConfig)))
                        .all().get(60, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException))
                        fail("cannot create " + topic + ": " + e.getCause());
                }
            }
            List<TopicPartitionInfo> parts;
            while (true) {
                try {
                    TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames()
                        .get(30, TimeUnit.SECONDS).get(topic);
                    parts = new ArrayList<>(d.partitions());
                    boolean full = !parts.isEmpty();
                    for (TopicPartitionInfo tp : parts)
                        full &= tp.replicas().size() == rf && tp.isr().size() == rf;
                    if (full) break;
                } catch (ExecutionException e) {
                    // not known to the broker asked yet: wait
                }
                if (System.nanoTime() > deadline)
                    fail("topic " + topic + " has no full in-sync replica set after " + a[5] + " s");
                Thread.sleep(500);
            }
            parts.sort((x, y) -> Integer.compare(x.partition(), y.partition()));
            Config tcfg;
            while (true) {
                try {
                    ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
                    tcfg = admin.describeConfigs(List.of(r)).all().get(30, TimeUnit.SECONDS).get(r);
                    break;
                } catch (ExecutionException e) {
                    if (System.nanoTime() > deadline) fail("describeConfigs of topic " + topic + ": " + e.getCause());
                    Thread.sleep(500);
                }
            }
            List<String> reps = new ArrayList<>(), isr = new ArrayList<>(), bj = new ArrayList<>();
            for (TopicPartitionInfo tp : parts) {
                reps.add(String.valueOf(tp.replicas().size()));
                isr.add(String.valueOf(tp.isr().size()));
            }
            brokerJson.forEach((k, v) -> bj.add(q(k) + ": " + v));
            System.out.println("SNAPSHOT {\"brokers\": {" + String.join(", ", bj) + "}, \"topic\": {\"replicas\": ["
                + String.join(", ", reps) + "], \"isr\": [" + String.join(", ", isr) + "], \"config\": "
                + obj(pick(tcfg, topicKeys)) + "}}");
        }
        System.exit(0);
    }
}
