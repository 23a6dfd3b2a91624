package io.leasehold.server.edge;

import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Tells clients where the leader is. A follower serves every call by forwarding it to the leader
 * (one more hop, and the follower's forwarding window); when it knows the leader, it names the
 * leader's client endpoint in the response headers, so that a client can send its next calls
 * there. Advice only: a client that cannot reach that endpoint keeps using this node.
 */
public final class LeaderHint implements ServerInterceptor {

  /** The response header that carries the leader's {@code host:port} for clients. */
  public static final Metadata.Key<String> HEADER =
      Metadata.Key.of("leasehold-leader", Metadata.ASCII_STRING_MARSHALLER);

  private final Supplier<Optional<String>> leaderElsewhere;

  /**
   * @param leaderElsewhere the leader's client endpoint, empty when this node leads or none is known
   */
  public LeaderHint(Supplier<Optional<String>> leaderElsewhere) {
    this.leaderElsewhere = leaderElsewhere;
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    return next.startCall(
        new SimpleForwardingServerCall<>(call) {
          @Override
          public void sendHeaders(Metadata responseHeaders) {
            leaderElsewhere.get().ifPresent(endpoint -> responseHeaders.put(HEADER, endpoint));
            super.sendHeaders(responseHeaders);
          }
        },
        headers);
  }
}
