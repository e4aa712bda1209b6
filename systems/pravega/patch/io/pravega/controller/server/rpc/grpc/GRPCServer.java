package io.pravega.controller.server.rpc.grpc;

import com.google.common.util.concurrent.AbstractIdleService;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.pravega.common.tracing.RequestTracker;
import io.pravega.controller.server.ControllerService;
import io.pravega.controller.server.rpc.grpc.v1.ControllerServiceImpl;
import io.pravega.controller.server.security.auth.GrpcAuthHelper;
import io.pravega.shared.controller.tracing.RPCTracingHelpers;
import io.pravega.shared.rest.security.AuthHandlerManager;
import java.net.InetSocketAddress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * streambench: stands in for Pravega 0.13.0's controller gRPC server (same class name, put before the Pravega jars on
 * the controller's classpath). Pravega's binds every interface (NettyServerBuilder.forPort) and has no setting for the
 * address; this one binds the address of the system property streambench.grpc.bindAddress (default 127.0.0.1).
 * It serves the same ControllerServiceImpl; authorization and TLS, which the benchmark clusters do not use, are refused
 * instead of silently dropped.
 */
public class GRPCServer extends AbstractIdleService {
    private static final Logger LOG = LoggerFactory.getLogger(GRPCServer.class);
    private final Server server;
    private final GRPCServerConfig config;
    private final String host;

    public GRPCServer(ControllerService controllerService, GRPCServerConfig serverConfig, RequestTracker requestTracker) {
        if (serverConfig.isAuthorizationEnabled() || serverConfig.isTlsEnabled()) {
            throw new IllegalArgumentException("streambench GRPCServer: authorization and TLS are not supported");
        }
        this.config = serverConfig;
        this.host = System.getProperty("streambench.grpc.bindAddress", "127.0.0.1");
        GrpcAuthHelper authHelper = new GrpcAuthHelper(false, serverConfig.getTokenSigningKey(),
                serverConfig.getAccessTokenTTLInSeconds());
        this.server = NettyServerBuilder.forAddress(new InetSocketAddress(host, serverConfig.getPort()))
                .withChildOption(ChannelOption.SO_REUSEADDR, true)
                .addService(ServerInterceptors.intercept(
                        new ControllerServiceImpl(controllerService, authHelper, requestTracker,
                                serverConfig.isReplyWithStackTraceOnError(), serverConfig.isRGWritesWithReadPermEnabled()),
                        RPCTracingHelpers.getServerInterceptor(requestTracker)))
                .build();
    }

    /** No authorization: ControllerServiceStarter hands this (null) to the REST resources, as Pravega's does. */
    public AuthHandlerManager getAuthHandlerManager() {
        return null;
    }

    @Override
    protected void startUp() throws Exception {
        server.start();
        LOG.info("Started gRPC server listening on {}:{} (streambench loopback GRPCServer)", host, config.getPort());
    }

    @Override
    protected void shutDown() throws Exception {
        LOG.info("Stopping gRPC server listening on {}:{}", host, config.getPort());
        server.shutdown();
        server.awaitTermination();
        LOG.info("gRPC server terminated");
    }
}
