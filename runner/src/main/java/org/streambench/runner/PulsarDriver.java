package org.streambench.runner;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.pulsar.client.api.ConsumerBuilder;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.ProducerBuilder;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SizeUnit;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;
import org.apache.pulsar.client.api.TypedMessageBuilder;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Pulsar driver: client from pulsar-client, the few admin calls over plain HTTP (REST v2). */
final class PulsarDriver implements Driver {
    private final DriverConfig cfg;
    private final String serviceUrl, httpUrl;
    private final PulsarClient client;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private final List<AutoCloseable> open = new ArrayList<>();
    private String tenant, namespace; // namespace = tenant/ns-runId
    private boolean partitioned;

    PulsarDriver(DriverConfig cfg, String serviceUrlOverride, String httpUrlOverride) throws Exception {
        this.cfg = cfg;
        this.serviceUrl = serviceUrlOverride != null ? serviceUrlOverride : cfg.serviceUrl;
        this.httpUrl = stripSlash(httpUrlOverride != null ? httpUrlOverride : cfg.httpUrl);
        if (serviceUrl == null) throw new ConfigException(cfg.file, "client.serviceUrl", "missing, and no --cluster given");
        if (httpUrl == null) throw new ConfigException(cfg.file, "client.httpUrl", "missing, and no --cluster given");
        var b = PulsarClient.builder()
                .serviceUrl(serviceUrl)
                .ioThreads(cfg.ioThreads)
                .connectionsPerBroker(cfg.connectionsPerBroker)
                .maxConcurrentLookupRequests(cfg.maxConcurrentLookupRequests)
                .maxLookupRequests(Integer.MAX_VALUE)
                .memoryLimit(cfg.clientMemoryLimitMB, SizeUnit.MEGA_BYTES)
                .operationTimeout((int) CALL_TIMEOUT_MS, TimeUnit.MILLISECONDS)
                .connectionTimeout(10, TimeUnit.SECONDS)
                .listenerThreads(Runtime.getRuntime().availableProcessors())
                .statsInterval(0, TimeUnit.SECONDS)
                .allowTlsInsecureConnection(cfg.tlsAllowInsecureConnection)
                .enableTlsHostnameVerification(cfg.tlsEnableHostnameVerification);
        if (cfg.tlsTrustCertsFilePath != null && !cfg.tlsTrustCertsFilePath.isEmpty())
            b.tlsTrustCertsFilePath(cfg.tlsTrustCertsFilePath);
        this.client = b.build();
    }

    private static String stripSlash(String s) { return s != null && s.endsWith("/") ? s.substring(0, s.length() - 1) : s; }

    @Override
    public ObjectNode endpoints() {
        ObjectNode n = Fields.JSON.createObjectNode();
        n.put("serviceUrl", serviceUrl);
        n.put("httpUrl", httpUrl);
        return n;
    }

    @Override
    public List<String> topicNames(String runId, int topics) {
        String[] tn = cfg.namespacePrefix.split("/");
        tenant = tn[0];
        namespace = tenant + "/" + tn[1] + "-" + runId;
        List<String> l = new ArrayList<>();
        for (int i = 0; i < topics; i++) l.add(String.format("%s://%s/sb-%s-%04d", cfg.topicType, namespace, runId, i));
        return l;
    }

    private HttpResponse<String> call(String method, String path, String body) throws Exception {
        HttpRequest.Builder r = HttpRequest.newBuilder(URI.create(httpUrl + path)).timeout(Duration.ofMillis(CALL_TIMEOUT_MS))
                .header("Content-Type", "application/json");
        r.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        return http.send(r.build(), HttpResponse.BodyHandlers.ofString());
    }

    private void ok(String what, HttpResponse<String> resp, int... alsoOk) {
        int s = resp.statusCode();
        if (s >= 200 && s < 300) return;
        for (int a : alsoOk) if (s == a) return;
        throw new IllegalStateException("Pulsar admin " + what + ": HTTP " + s + " " + resp.body());
    }

    private String restTopic(String fullTopic) {
        // persistent://t/ns/x -> persistent/t/ns/x
        return fullTopic.replace("://", "/");
    }

    @Override
    public void createTopics(List<String> topics, int partitions) throws Exception {
        HttpResponse<String> r = call("GET", "/admin/v2/tenants/" + tenant, null);
        if (r.statusCode() == 404) {
            String cluster = cfg.clusterName;
            if (cluster == null) {
                HttpResponse<String> cl = call("GET", "/admin/v2/clusters", null);
                ok("list clusters", cl);
                JsonNode arr = Fields.JSON.readTree(cl.body());
                if (!arr.isArray() || arr.isEmpty()) throw new IllegalStateException("Pulsar admin: no clusters");
                cluster = arr.get(0).asText();
            }
            ok("create tenant " + tenant, call("PUT", "/admin/v2/tenants/" + tenant,
                    "{\"allowedClusters\":[\"" + cluster + "\"],\"adminRoles\":[]}"), 409);
        } else ok("get tenant " + tenant, r);
        ok("create namespace " + namespace, call("PUT", "/admin/v2/namespaces/" + namespace, null));
        ok("set persistence", call("POST", "/admin/v2/namespaces/" + namespace + "/persistence",
                String.format("{\"bookkeeperEnsemble\":%d,\"bookkeeperWriteQuorum\":%d,\"bookkeeperAckQuorum\":%d,\"managedLedgerMaxMarkDeleteRate\":1.0}",
                        cfg.ensembleSize, cfg.writeQuorum, cfg.ackQuorum)));
        HttpResponse<String> bq = call("POST", "/admin/v2/namespaces/" + namespace + "/backlogQuota?backlogQuotaType=destination_storage",
                "{\"limitSize\":-1,\"limitTime\":-1,\"policy\":\"producer_exception\"}");
        if (bq.statusCode() >= 300) Log.warn("Pulsar admin: set unlimited backlog quota: HTTP " + bq.statusCode() + " " + bq.body());
        ok("set deduplication", call("POST", "/admin/v2/namespaces/" + namespace + "/deduplication",
                Boolean.toString(cfg.deduplicationEnabled)));
        // read back the persistence policy: durability is the experiment's axis
        HttpResponse<String> pr = call("GET", "/admin/v2/namespaces/" + namespace + "/persistence", null);
        ok("get persistence", pr);
        JsonNode pj = Fields.JSON.readTree(pr.body());
        if (pj.path("bookkeeperEnsemble").asInt() != cfg.ensembleSize || pj.path("bookkeeperWriteQuorum").asInt() != cfg.writeQuorum
                || pj.path("bookkeeperAckQuorum").asInt() != cfg.ackQuorum)
            throw new IllegalStateException("Pulsar namespace persistence read back as " + pr.body() + ", expected E/W/A "
                    + cfg.ensembleSize + "/" + cfg.writeQuorum + "/" + cfg.ackQuorum);
        partitioned = partitions > 1;
        for (String t : topics) {
            if (partitioned) ok("create partitioned topic " + t, call("PUT", "/admin/v2/" + restTopic(t) + "/partitions", Integer.toString(partitions)));
            else ok("create topic " + t, call("PUT", "/admin/v2/" + restTopic(t), null));
        }
    }

    @Override
    public void waitForTopics(List<String> topics, int partitions, long timeoutMs) throws Exception {
        partitioned = partitions > 1;
        long deadline = System.currentTimeMillis() + timeoutMs;
        for (String t : topics) {
            while (true) {
                HttpResponse<String> r = call("GET", "/admin/v2/" + restTopic(t) + "/partitions", null);
                if (r.statusCode() == 200) {
                    int n = Fields.JSON.readTree(r.body()).path("partitions").asInt(-1);
                    if ((partitions > 1 && n == partitions)) break;
                    if (partitions == 1) {
                        HttpResponse<String> s = call("GET", "/admin/v2/" + restTopic(t) + "/stats", null);
                        if (s.statusCode() == 200) break;
                    }
                }
                if (System.currentTimeMillis() > deadline) throw new IllegalStateException("topic " + t + " not created after " + timeoutMs + " ms");
                Thread.sleep(300);
            }
        }
    }

    @Override
    public Producer createProducer(String topic) throws Exception {
        ProducerBuilder<byte[]> b = client.newProducer().topic(topic)
                .enableBatching(cfg.batchingEnabled)
                .batchingMaxPublishDelay(cfg.batchingMaxPublishDelayMs, TimeUnit.MILLISECONDS)
                .batchingMaxBytes(cfg.batchingMaxBytes)
                .batchingMaxMessages(Integer.MAX_VALUE)
                .blockIfQueueFull(cfg.blockIfQueueFull)
                .sendTimeout(0, TimeUnit.MILLISECONDS);
        if (cfg.pendingQueueSize > 0) b.maxPendingMessages(cfg.pendingQueueSize);
        if (cfg.maxPendingMessagesAcrossPartitions > 0) b.maxPendingMessagesAcrossPartitions(cfg.maxPendingMessagesAcrossPartitions);
        if (cfg.batchingPartitionSwitchFrequencyByPublishDelay > 0)
            b.roundRobinRouterBatchingPartitionSwitchFrequency(cfg.batchingPartitionSwitchFrequencyByPublishDelay);
        org.apache.pulsar.client.api.Producer<byte[]> p = Driver.await(b.createAsync(), "creating a producer on " + topic);
        Producer bp = new Producer() {
            @Override
            public void send(String key, byte[] payload, SendCallback cb) {
                TypedMessageBuilder<byte[]> m = p.newMessage().value(payload);
                if (key != null) m.key(key);
                m.sendAsync().whenComplete(cb);
            }

            @Override
            public void flush() throws Exception { Driver.await(p.flushAsync(), "flushing a producer"); }

            @Override
            public void flush(long timeoutMs) throws Exception {
                try {
                    p.flushAsync().get(timeoutMs, TimeUnit.MILLISECONDS);
                } catch (java.util.concurrent.ExecutionException e) {
                    throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
                }
            }

            @Override
            public void close() throws Exception { Driver.await(p.closeAsync(), "closing a producer"); }
        };
        synchronized (open) { open.add(bp::close); }
        return bp;
    }

    @Override
    public Consumer createConsumer(String topic, String subscription, Handler handler) throws Exception {
        return wrap(Driver.await(consumerBuilder(topic, subscription, handler).subscribeAsync(), "subscribing " + subscription + " to " + topic));
    }

    @Override
    public java.util.concurrent.CompletableFuture<Consumer> connectConsumer(String topic, String subscription, Handler handler) {
        return consumerBuilder(topic, subscription, handler).subscribeAsync().thenApply(this::wrap);
    }

    private ConsumerBuilder<byte[]> consumerBuilder(String topic, String subscription, Handler handler) {
        return client.newConsumer().topic(topic).subscriptionName(subscription)
                .subscriptionType(SubscriptionType.valueOf(cfg.subscriptionType))
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                .receiverQueueSize(cfg.receiverQueueSize)
                .maxTotalReceiverQueueSizeAcrossPartitions(cfg.maxTotalReceiverQueueSizeAcrossPartitions > 0
                        ? cfg.maxTotalReceiverQueueSizeAcrossPartitions : Integer.MAX_VALUE)
                .messageListener((c, msg) -> {
                    MessageId id = msg.getMessageId();
                    int part = id instanceof MessageIdAdv ? ((MessageIdAdv) id).getPartitionIndex() : -1;
                    handler.onMessage(msg.getValue(), part);
                    c.acknowledgeAsync(msg);
                });
    }

    private Consumer wrap(org.apache.pulsar.client.api.Consumer<byte[]> c) {
        Consumer bc = new Consumer() {
            @Override
            public void pause() { c.pause(); }

            @Override
            public void resume() { c.resume(); }

            @Override
            public void close() throws Exception { Driver.await(c.closeAsync(), "closing a consumer"); }
        };
        synchronized (open) { open.add(bc::close); }
        return bc;
    }

    @Override
    public void waitConsumersReady(Map<String, Integer> expected, long timeoutMs) {
        // subscribe() returns once the subscription exists on every partition; nothing more to wait for
    }

    @Override
    public void deleteTopics(List<String> topics) throws Exception {
        List<String> errors = new ArrayList<>();
        for (String t : topics) {
            HttpResponse<String> r = call("DELETE", "/admin/v2/" + restTopic(t) + (partitioned ? "/partitions" : "") + "?force=true", null);
            if (r.statusCode() >= 300 && r.statusCode() != 404) errors.add(t + ": HTTP " + r.statusCode() + " " + r.body());
        }
        HttpResponse<String> r = call("DELETE", "/admin/v2/namespaces/" + namespace, null);
        if (r.statusCode() >= 300 && r.statusCode() != 404) errors.add("namespace " + namespace + ": HTTP " + r.statusCode() + " " + r.body());
        if (!errors.isEmpty()) throw new IllegalStateException("Pulsar clean-up: " + String.join("; ", errors));
    }

    @Override
    public void closeClients() {
        Driver.closeAll(open);
        try { Driver.await(client.closeAsync(), "closing the Pulsar client"); } catch (Exception e) { Log.warn("pulsar client close: " + e); }
    }

    @Override
    public void close() { closeClients(); }
}
