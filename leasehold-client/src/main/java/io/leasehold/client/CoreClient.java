package io.leasehold.client;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall.SimpleForwardingClientCall;
import io.grpc.ForwardingClientCallListener.SimpleForwardingClientCallListener;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import io.leasehold.LeaseException;
import io.leasehold.LeaseProtocolException;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.LeaseTimeoutException;
import io.leasehold.core.proto.BatchOp;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.KeepAliveRequest;
import io.leasehold.core.proto.KeepAliveResponse;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.LeaseholdGrpc.LeaseholdStub;
import io.leasehold.core.proto.WatchRequest;
import io.leasehold.core.proto.WatchResponse;
import java.net.InetSocketAddress;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A connection to the consistent core: one gRPC channel per node, calls sent to one node at a
 * time. Any node serves any call (it forwards to the leader), so failover is simply trying the
 * next node when one does not answer; a write is retried with the same call id, which the core
 * applies once. A follower names the leader in its response headers ({@value #LEADER_HEADER_NAME});
 * the client then sends its next calls there, saving the follower's forwarding hop, unless that
 * node failed to answer in the last {@link #HINT_QUARANTINE}.
 */
public final class CoreClient implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(CoreClient.class);
  private static final SecureRandom RANDOM = new SecureRandom();

  /**
   * The key prefix of named leases in the core: lease {@code N} is the key {@code
   * /_leasehold/leases/N}. Deleting such a key is how an operator revokes a lease.
   */
  public static final String LEASE_PREFIX = "/_leasehold/leases/";

  /** The response header in which a follower names the leader's client endpoint (host:port). */
  static final String LEADER_HEADER_NAME = "leasehold-leader";

  private static final Metadata.Key<String> LEADER_HEADER =
      Metadata.Key.of(LEADER_HEADER_NAME, Metadata.ASCII_STRING_MARSHALLER);

  /**
   * The request header that numbers a retried attempt of a call (2 for the first retry; the first
   * attempt sends none): the core then decides the call through its log, never from the leader's
   * state alone, so that an earlier attempt reaching the log late is answered the same.
   */
  static final String ATTEMPT_HEADER_NAME = "leasehold-attempt";

  private static final Metadata.Key<String> ATTEMPT_HEADER =
      Metadata.Key.of(ATTEMPT_HEADER_NAME, Metadata.ASCII_STRING_MARSHALLER);

  /**
   * How long a node that did not answer is not followed as the leader a hint names: a client cut
   * off from the leader alone would otherwise bounce between the hint and a timeout.
   */
  static final Duration HINT_QUARANTINE = Duration.ofSeconds(5);

  /**
   * How often the client pings a node while a call is open, to find a connection that died
   * without a reset. The node must permit it ({@code CoreNode.CLIENT_PING_PERMIT}), or it ends
   * the connection with GOAWAY {@code too_many_pings}.
   */
  static final Duration PING_INTERVAL = Duration.ofSeconds(10);

  /**
   * The largest message the client takes from a node (gRPC's default is 4 MiB). A page of a prefix
   * read is at most about 2 MiB ({@code Limits.MAX_PAGE_BYTES} and one key), so this is for what
   * a page cannot bound: one watch message carries every matching event of one log entry (a
   * session with many keys that expires), and a node from before paged reads answers a prefix
   * read in one message. Above 16 MiB a read must page anyway.
   */
  static final int MAX_INBOUND_BYTES = 16 * 1024 * 1024;


  /**
   * The nodes calls go to, replaced as a whole when the cluster's membership changes ({@link
   * #followMembers}); {@link #current} indexes into it.
   */
  private volatile Nodes nodes;
  private final Duration attemptTimeout;
  private final AtomicInteger current = new AtomicInteger();
  private final List<ClientInterceptor> extra;
  private final ClientTls tls;
  /** Asks the cluster for its members now and then; null unless {@link #followMembers} was called. */
  private java.util.concurrent.ScheduledExecutorService membersPoller;
  /** Set by {@link #close()} (guarded by this): no node set is swapped in after it. */
  private boolean closed;

  /**
   * The nodes, their channels, and when each last failed to answer (System.nanoTime()).
   *
   * @param endpoints the nodes' client addresses
   * @param channels one per endpoint
   * @param failedAt one per endpoint
   * @param byEndpoint each endpoint's index, by {@code host:port}
   */
  private record Nodes(
      List<InetSocketAddress> endpoints, ManagedChannel[] channels, AtomicLongArray failedAt, Map<String, Integer> byEndpoint) {}
  private final long clientIdHigh = RANDOM.nextLong();
  private final long clientIdLow = RANDOM.nextLong();
  private final AtomicLong calls = new AtomicLong();
  private final OpBatcher batcher;

  /**
   * Connects (lazily) to the given nodes.
   *
   * @param endpoints the nodes' client addresses
   * @param attemptTimeout how long one node has to answer before the next is tried
   */
  public CoreClient(List<InetSocketAddress> endpoints, Duration attemptTimeout) {
    this(endpoints, attemptTimeout, List.of(), null);
  }

  /**
   * Connects (lazily) to the given nodes, over TLS when {@code tls} is given.
   *
   * @param endpoints the nodes' client addresses
   * @param attemptTimeout how long one node has to answer before the next is tried
   * @param tls the trusted authorities and the client's certificate; null for plaintext
   */
  public CoreClient(List<InetSocketAddress> endpoints, Duration attemptTimeout, ClientTls tls) {
    this(endpoints, attemptTimeout, List.of(), tls);
  }

  /**
   * Connects (lazily) to the nodes of a core URI ({@link CoreBackendProvider#target}).
   *
   * @param target the nodes, and TLS if the URI asks for it
   * @param attemptTimeout how long one node has to answer before the next is tried
   */
  public CoreClient(CoreTarget target, Duration attemptTimeout) {
    this(target.endpoints(), attemptTimeout, List.of(), target.tls());
  }

  /**
   * Connects (lazily) to the given nodes, with extra interceptors on every channel (tests use
   * them to lose replies on the way back).
   */
  CoreClient(List<InetSocketAddress> endpoints, Duration attemptTimeout, List<ClientInterceptor> extra) {
    this(endpoints, attemptTimeout, extra, null);
  }

  CoreClient(List<InetSocketAddress> endpoints, Duration attemptTimeout, List<ClientInterceptor> extra, ClientTls tls) {
    if (endpoints.isEmpty()) {
      throw new IllegalArgumentException("at least one node address is needed");
    }
    this.attemptTimeout = attemptTimeout;
    this.extra = List.copyOf(extra);
    this.tls = tls;
    this.nodes = nodes(List.copyOf(endpoints), null);
    // Connect to the first node now rather than on the first call.
    nodes.channels()[0].getState(true);
    this.batcher = new OpBatcher(this);
  }

  /**
   * The nodes at {@code endpoints}, reusing the channels of {@code old} (by {@code host:port}) with
   * when each last failed, so that a node that just failed stays out of the leader hints' way.
   */
  private Nodes nodes(List<InetSocketAddress> endpoints, Nodes old) {
    ManagedChannel[] channels = new ManagedChannel[endpoints.size()];
    AtomicLongArray failedAt = new AtomicLongArray(endpoints.size());
    Map<String, Integer> byEndpoint = new HashMap<>();
    long longAgo = System.nanoTime() - 2 * HINT_QUARANTINE.toNanos();
    for (int i = 0; i < channels.length; i++) {
      InetSocketAddress a = endpoints.get(i);
      byEndpoint.putIfAbsent(describe(a), i);
      Integer known = old == null ? null : old.byEndpoint().get(describe(a));
      if (known != null) {
        channels[i] = old.channels()[known];
        failedAt.set(i, old.failedAt().get(known));
        continue;
      }
      failedAt.set(i, longAgo);
      NettyChannelBuilder builder = NettyChannelBuilder.forAddress(a.getHostString(), a.getPort());
      // TLS: the shared context checks the node's certificate against the trusted authorities
      // and its host name (gRPC's default), and shows the client's certificate if it has one.
      builder = tls == null ? builder.usePlaintext() : builder.sslContext(tls.context());
      channels[i] =
          builder
              .intercept(extra)
              .intercept(leaderHints(describe(a)))
              // Detect a dead connection (a peer gone without a reset) within seconds.
              .keepAliveTime(PING_INTERVAL.toSeconds(), TimeUnit.SECONDS)
              .keepAliveTimeout(5, TimeUnit.SECONDS)
              .maxInboundMessageSize(MAX_INBOUND_BYTES)
              .build();
    }
    return new Nodes(List.copyOf(endpoints), channels, failedAt, Map.copyOf(byEndpoint));
  }

  /**
   * Follows the cluster's membership: every {@code every}, asks a node for the voting members
   * ({@code Members}) and from then on sends calls to them, so that nodes added and removed by
   * {@code leasehold admin} are used and dropped without a restart. A client whose addresses are
   * none of the members' own (it reaches them through a proxy, a load balancer or port
   * forwarding) keeps its own: it could not reach the members' addresses anyway.
   *
   * @param every how often to ask (1 ms to 1 h)
   */
  public synchronized void followMembers(Duration every) {
    if (every.isNegative() || every.isZero() || every.compareTo(Duration.ofHours(1)) > 0) {
      throw new IllegalArgumentException("every must be 1 ms to 1 h; was " + every.toMillis() + " ms");
    }
    if (membersPoller != null) {
      return;
    }
    membersPoller =
        java.util.concurrent.Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "leasehold-members");
              t.setDaemon(true);
              return t;
            });
    // The first ask at once: a client given one address must learn the others before that node
    // can fail, or it is left with no node to fail over to (found by MembershipChangeTest: the
    // lease's backend, given only n1, had not asked yet when n1 died, and its release hung).
    membersPoller.scheduleWithFixedDelay(this::refreshMembers, 0, every.toMillis(), TimeUnit.MILLISECONDS);
  }

  /**
   * Asks the nodes for the members, one after another from the current one, until one answers
   * (the poller's thread). Directly on each channel, not through {@link #call}: a node that knows
   * no leader answers {@code UNAVAILABLE}, and the poll must not move the client's calls away
   * from it, nor mark it failed, in the middle of an election.
   */
  private void refreshMembers() {
    Nodes n = nodes;
    int first = currentIn(n);
    for (int k = 0; k < n.channels().length; k++) {
      ManagedChannel channel = n.channels()[(first + k) % n.channels().length];
      try {
        io.leasehold.core.proto.MembersResponse members =
            LeaseholdGrpc.newBlockingStub(channel)
                .withDeadlineAfter(attemptTimeout.toNanos(), TimeUnit.NANOSECONDS)
                .members(io.leasehold.core.proto.MembersRequest.getDefaultInstance());
        List<String> addresses = members.getMembersList().stream().map(io.leasehold.core.proto.Member::getAddress).toList();
        if (!addresses.isEmpty()) {
          useMembers(CoreBackendProvider.endpoints("leasehold://" + String.join(",", addresses)));
        }
        return;
      } catch (StatusRuntimeException | IllegalArgumentException e) {
        // This node cannot say (no leader, no member, an older core, a bad address): ask the next.
        log.debug("could not learn the cluster's members from {}: {}", describe(n.endpoints().get((first + k) % n.channels().length)), e.toString());
      }
    }
  }

  /**
   * Sends calls to {@code members} from now on, unless none of them is a node this client uses
   * now (see {@link #followMembers}). Channels to nodes that are gone are closed once their calls
   * end; calls that fail on them are retried on the others, as when a node fails.
   *
   * @param members the cluster's voting members' client endpoints
   * @return whether the nodes changed
   */
  synchronized boolean useMembers(List<InetSocketAddress> members) {
    Nodes old = nodes;
    java.util.Set<String> now = new java.util.LinkedHashSet<>();
    members.forEach(a -> now.add(describe(a)));
    if (now.isEmpty() || now.equals(old.byEndpoint().keySet()) || now.stream().noneMatch(old.byEndpoint()::containsKey)) {
      return false;
    }
    if (closed) {
      return false;
    }
    List<InetSocketAddress> endpoints = new java.util.ArrayList<>();
    for (InetSocketAddress a : members) {
      // Keep an endpoint as the client knew it (a resolved address stays resolved).
      Integer known = old.byEndpoint().get(describe(a));
      endpoints.add(known != null ? old.endpoints().get(known) : a);
    }
    Nodes next = nodes(endpoints, old);
    String using = describe(old.endpoints().get(Math.min(current.get(), old.endpoints().size() - 1)));
    nodes = next;
    current.set(next.byEndpoint().getOrDefault(using, 0));
    for (Map.Entry<String, Integer> e : old.byEndpoint().entrySet()) {
      if (!next.byEndpoint().containsKey(e.getKey())) {
        old.channels()[e.getValue()].shutdown(); // calls in flight finish; new ones go elsewhere
      }
    }
    log.info("the cluster's members changed: calls go to {} (were {})", describe(next.endpoints()), describe(old.endpoints()));
    return true;
  }

  /** {@return the nodes calls go to now, in order} */
  public List<InetSocketAddress> endpoints() {
    return nodes.endpoints();
  }

  /** {@return the index into {@code n} of the node calls go to now} */
  private int currentIn(Nodes n) {
    int i = current.get();
    return i < n.channels().length ? i : 0;
  }

  /**
   * Sends one write together with the others this client makes at the same time ({@link
   * OpBatcher}); the answer is the same as the write's unary call would give.
   *
   * @param op the write
   * @param parser the parser of the unary call's response
   * @param <T> the response type
   * @return the response, or the exception the unary call would have completed with
   */
  public <T> CompletableFuture<T> batched(BatchOp op, com.google.protobuf.Parser<T> parser) {
    return parsed(batcher.submit(op), parser);
  }

  /**
   * Like {@link #batched(BatchOp, com.google.protobuf.Parser)}, for a caller that stops waiting
   * once {@code within} has passed: the write is not sent again after that.
   *
   * @param op the write
   * @param parser the parser of the unary call's response
   * @param within how long the caller waits for the answer
   * @param <T> the response type
   * @return the response, or the exception the unary call would have completed with
   */
  public <T> CompletableFuture<T> batched(BatchOp op, com.google.protobuf.Parser<T> parser, Duration within) {
    return parsed(batcher.submit(op, within.toNanos()), parser);
  }

  private static <T> CompletableFuture<T> parsed(
      CompletableFuture<com.google.protobuf.ByteString> response, com.google.protobuf.Parser<T> parser) {
    return response.thenApply(
        bytes -> {
          try {
            return parser.parseFrom(bytes);
          } catch (com.google.protobuf.InvalidProtocolBufferException e) {
            throw new CompletionException(refused(e));
          }
        });
  }


  /** {@return a fresh call id for one logical write; its retries reuse it} */
  public CallId newCall() {
    return CallId.newBuilder()
        .setClientIdHigh(clientIdHigh)
        .setClientIdLow(clientIdLow)
        .setCallId(calls.incrementAndGet())
        .build();
  }

  /**
   * Sends one unary call, trying each node in turn (starting with the last one that answered)
   * while they are unreachable or slow. Refusals (bad argument, unknown session) are not retried.
   *
   * @param rpc the call on a stub
   * @param <T> the response type
   * @return the response, or a {@link LeaseException}: unavailable when no node answered
   */
  public <T> CompletableFuture<T> call(BiConsumer<LeaseholdStub, StreamObserver<T>> rpc) {
    CompletableFuture<T> result = new CompletableFuture<>();
    attempt(rpc, result, 0, null, 0, false);
    return result;
  }

  /**
   * Like {@link #call(BiConsumer)}, but gives up once {@code within} has passed: no node is tried
   * after it, and the node being tried has only what is left of it. For a caller that stops
   * waiting then (the lease engine's operation timeout), since a retry nobody waits for can only
   * make a grant nobody knows about.
   *
   * @param rpc the call on a stub
   * @param within how long the caller waits for the answer
   * @param <T> the response type
   * @return the response, or a {@link LeaseException}: a {@link LeaseTimeoutException} when the
   *     time ran out
   */
  public <T> CompletableFuture<T> call(
      BiConsumer<LeaseholdStub, StreamObserver<T>> rpc, Duration within) {
    CompletableFuture<T> result = new CompletableFuture<>();
    attempt(rpc, result, 0, null, System.nanoTime() + within.toNanos(), true);
    return result;
  }

  private <T> void attempt(
      BiConsumer<LeaseholdStub, StreamObserver<T>> rpc,
      CompletableFuture<T> result,
      int tried,
      Throwable last,
      long deadline,
      boolean bounded) {
    Nodes n = nodes;
    if (tried >= 2 * n.channels().length) {
      result.completeExceptionally(
          new LeaseStoreUnavailableException(
              "no node of " + describe(n.endpoints()) + " answered: " + describe(last), last));
      return;
    }
    long timeout = attemptTimeout.toNanos();
    if (bounded) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        result.completeExceptionally(timedOut(tried, last));
        return;
      }
      timeout = Math.min(timeout, left);
    }
    // A node cut short by the caller's deadline did not fail: it just had less time than usual.
    boolean cutShort = timeout < attemptTimeout.toNanos();
    int node = currentIn(n);
    LeaseholdStub stub =
        LeaseholdGrpc.newStub(n.channels()[node]).withDeadlineAfter(timeout, TimeUnit.NANOSECONDS);
    if (tried > 0) {
      // An earlier attempt had no answer and may still reach the log: the core must decide this
      // one through the log too, so that the earlier one, arriving late, gets the same answer.
      Metadata attempt = new Metadata();
      attempt.put(ATTEMPT_HEADER, Integer.toString(tried + 1));
      stub = stub.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(attempt));
    }
    rpc.accept(
        stub,
        new StreamObserver<T>() {
          private T value;

          @Override
          public void onNext(T v) {
            value = v;
          }

          @Override
          public void onError(Throwable t) {
            Status.Code code = Status.fromThrowable(t).getCode();
            if (cutShort && code == Status.Code.DEADLINE_EXCEEDED) {
              result.completeExceptionally(timedOut(tried + 1, t));
            } else if (code == Status.Code.UNAVAILABLE || code == Status.Code.DEADLINE_EXCEEDED
                || code == Status.Code.CANCELLED || code == Status.Code.UNKNOWN) {
              log.debug("node {} did not answer ({}); trying the next", describe(n.endpoints().get(node)), describe(t));
              n.failedAt().set(node, System.nanoTime());
              if (nodes == n) {
                current.compareAndSet(node, (node + 1) % n.channels().length);
              }
              attempt(rpc, result, tried + 1, t, deadline, bounded);
            } else {
              result.completeExceptionally(refused(t));
            }
          }

          @Override
          public void onCompleted() {
            result.complete(value);
          }
        });
  }

  /** Opens the keep-alive stream on the current node. */
  StreamObserver<KeepAliveRequest> keepAlive(StreamObserver<KeepAliveResponse> responses) {
    Nodes n = nodes;
    return LeaseholdGrpc.newStub(n.channels()[currentIn(n)]).keepAlive(responses);
  }

  /** Opens a watch on the current node; cancel it through the returned handle. */
  Runnable watch(WatchRequest request, StreamObserver<WatchResponse> events) {
    CompletableFuture<ClientCallStreamObserver<WatchRequest>> call = new CompletableFuture<>();
    Nodes n = nodes;
    LeaseholdGrpc.newStub(n.channels()[currentIn(n)])
        .watch(
            request,
            new ClientResponseObserver<WatchRequest, WatchResponse>() {
              @Override
              public void beforeStart(ClientCallStreamObserver<WatchRequest> requestStream) {
                call.complete(requestStream);
              }

              @Override
              public void onNext(WatchResponse value) {
                events.onNext(value);
              }

              @Override
              public void onError(Throwable t) {
                events.onError(t);
              }

              @Override
              public void onCompleted() {
                events.onCompleted();
              }
            });
    return () -> call.thenAccept(c -> c.cancel("watch closed", null));
  }

  /** {@return the index of the node calls go to now, in the order the endpoints were given} */
  int currentNode() {
    return currentIn(nodes);
  }

  /** A node did not answer: try another next time. */
  void failOver() {
    Nodes n = nodes;
    int node = currentIn(n);
    n.failedAt().set(node, System.nanoTime());
    current.compareAndSet(node, (node + 1) % n.channels().length);
  }

  /** Reads the leader hint of every response that comes through node {@code node}'s channel. */
  private ClientInterceptor leaderHints(String node) {
    return new ClientInterceptor() {
      @Override
      public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
        return new SimpleForwardingClientCall<>(next.newCall(method, options)) {
          @Override
          public void start(Listener<R> listener, Metadata headers) {
            super.start(
                new SimpleForwardingClientCallListener<>(listener) {
                  @Override
                  public void onHeaders(Metadata responseHeaders) {
                    String leader = responseHeaders.get(LEADER_HEADER);
                    if (leader != null) {
                      followHint(node, leader);
                    }
                    super.onHeaders(responseHeaders);
                  }
                },
                headers);
          }
        };
      }
    };
  }

  private void followHint(String fromEndpoint, String leaderEndpoint) {
    Nodes n = nodes;
    Integer from = n.byEndpoint().get(fromEndpoint);
    Integer to = n.byEndpoint().get(leaderEndpoint);
    if (from == null || to == null || to.equals(from) || System.nanoTime() - n.failedAt().get(to) < HINT_QUARANTINE.toNanos()) {
      return; // not one of our addresses (e.g. behind a proxy), or it failed us recently
    }
    if (current.compareAndSet(from, to)) {
      log.debug("node {} names {} as the leader; sending calls there", fromEndpoint, leaderEndpoint);
    }
  }

  /** Closes every channel at once; calls in flight fail. */
  @Override
  public synchronized void close() {
    // Under the lock, so that no node set is swapped in after the channels are shut.
    closed = true;
    if (membersPoller != null) {
      membersPoller.shutdownNow();
    }
    for (ManagedChannel c : nodes.channels()) {
      c.shutdownNow();
    }
  }

  private LeaseTimeoutException timedOut(int tried, Throwable last) {
    return new LeaseTimeoutException(
        "gave up on the call at the caller's deadline after " + tried + " node(s) of "
            + describe(nodes.endpoints()) + " tried: " + describe(last), last);
  }

  static LeaseException refused(Throwable t) {
    Status status = Status.fromThrowable(t);
    return new LeaseProtocolException("the core refused the call: " + status.getCode() + ": " + status.getDescription(),
        t);
  }

  static boolean isSessionNotFound(Throwable t) {
    Throwable cause = t;
    while (cause != null) {
      if (cause instanceof StatusRuntimeException s && s.getStatus().getCode() == Status.Code.NOT_FOUND) {
        return true;
      }
      if (cause instanceof io.grpc.StatusException s && s.getStatus().getCode() == Status.Code.NOT_FOUND) {
        return true;
      }
      cause = cause.getCause();
    }
    return false;
  }

  private static String describe(InetSocketAddress a) {
    return a.getHostString() + ":" + a.getPort();
  }

  private static String describe(List<InetSocketAddress> endpoints) {
    return endpoints.stream().map(CoreClient::describe).collect(java.util.stream.Collectors.joining(", ", "[", "]"));
  }

  private static String describe(Throwable t) {
    if (t == null) {
      return "no answer";
    }
    Status s = Status.fromThrowable(t);
    return s.getCode() + (s.getDescription() == null ? "" : ": " + s.getDescription()) + tlsReason(t);
  }

  /**
   * {@return why a TLS handshake failed, when that is why a node did not answer} gRPC's status
   * says only "ssl exception"; the reason (an untrusted certificate, none shown) is in its cause.
   */
  private static String tlsReason(Throwable t) {
    for (Throwable c = t; c != null && c.getCause() != c; c = c.getCause()) {
      if (c instanceof javax.net.ssl.SSLException) {
        Throwable root = c;
        while (root.getCause() != null && root.getCause() != root) {
          root = root.getCause();
        }
        return " (TLS handshake failed: " + (root.getMessage() == null ? root : root.getMessage()) + ")";
      }
    }
    return "";
  }
}
