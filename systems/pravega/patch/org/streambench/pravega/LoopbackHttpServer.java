package org.streambench.pravega;

import io.vertx.core.AbstractVerticle;
import io.vertx.core.AsyncResult;
import io.vertx.core.Vertx;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.handler.BodyHandler;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import org.apache.bookkeeper.http.HttpRouter;
import org.apache.bookkeeper.http.HttpServer;
import org.apache.bookkeeper.http.HttpServiceProvider;
import org.apache.bookkeeper.http.vertx.VertxAbstractHandler;
import org.apache.bookkeeper.http.vertx.VertxHttpHandlerFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * streambench: the bookie's HTTP admin server (bookkeeper.conf httpServerClass) on one address. BookKeeper 4.14's
 * VertxHttpServer listens on every interface (its HttpServer interface has no host); this one serves the same
 * endpoints with the same handlers on the address of the system property streambench.http.bindAddress
 * (default 127.0.0.1).
 */
public class LoopbackHttpServer implements HttpServer {
    private static final Logger LOG = LoggerFactory.getLogger(LoopbackHttpServer.class);
    private final Vertx vertx = Vertx.vertx();
    private HttpServiceProvider provider;
    private volatile boolean running;

    @Override
    public void initialize(HttpServiceProvider httpServiceProvider) {
        this.provider = httpServiceProvider;
    }

    @Override
    public boolean startServer(int port) {
        String host = System.getProperty("streambench.http.bindAddress", "127.0.0.1");
        Router router = Router.router(vertx);
        router.route().handler(BodyHandler.create());
        new HttpRouter<VertxAbstractHandler>(new VertxHttpHandlerFactory(provider)) {
            @Override
            public void bindHandler(String endpoint, VertxAbstractHandler handler) {
                router.get(endpoint).blockingHandler(handler);
                router.put(endpoint).blockingHandler(handler);
                router.post(endpoint).blockingHandler(handler);
                router.delete(endpoint).blockingHandler(handler);
            }
        }.bindAll();
        CompletableFuture<AsyncResult<io.vertx.core.http.HttpServer>> started = new CompletableFuture<>();
        vertx.deployVerticle(new AbstractVerticle() {
            @Override
            public void start() {
                vertx.createHttpServer().requestHandler(router::accept).listen(port, host, started::complete);
            }
        });
        try {
            AsyncResult<io.vertx.core.http.HttpServer> r = started.get();
            if (r.succeeded()) {
                running = true;
                LOG.info("bookie HTTP server listening on {}:{}", host, port);
                return true;
            }
            LOG.error("bookie HTTP server failed to start on {}:{}", host, port, r.cause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            LOG.error("bookie HTTP server failed to start on {}:{}", host, port, e);
        }
        return false;
    }

    @Override
    public void stopServer() {
        CountDownLatch done = new CountDownLatch(1);
        try {
            provider.close();
        } catch (Exception e) {
            LOG.warn("closing the HTTP service provider", e);
        }
        vertx.close(r -> {
            running = false;
            done.countDown();
        });
        try {
            done.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }
}
