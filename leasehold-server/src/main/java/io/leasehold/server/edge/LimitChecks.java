package io.leasehold.server.edge;

import io.leasehold.server.Limits;
import io.leasehold.server.replicated.CoreState;
import io.leasehold.server.replicated.Utf8;

import io.grpc.Attributes;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerTransportFilter;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.CompareAndSetRequest;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.WatchRequest;
import io.leasehold.server.state.Command;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The checks of {@link Limits} where requests arrive: one call per RPC in {@link ClientService}
 * for what a request asks (sizes, keys per session), and a transport filter with an interceptor
 * for what one connection holds open (watches, calls in flight). A refusal is {@code
 * RESOURCE_EXHAUSTED} naming the limit's flag and value, before anything reaches the log. Checks
 * that pass allocate nothing; the interceptor adds one small listener per call.
 *
 * <p>Keys per session are counted in this node's applied state when a write arrives, so writes to
 * one session that are still on their way to the log (at most the calls in flight, a batch's ops
 * each) can take a session past the limit by that many; never further.
 *
 * <p><b>The data quota</b> ({@code --max-data-bytes}) is checked the same way, against {@link
 * CoreState#quotaBytes()} (the data, and what is remembered of clients' calls) as this node has applied it, never in the log's apply (so every replica
 * applies the same entries whatever its own flag, and stays deterministic). Once the state holds
 * at least the quota, every write that can add data is refused: put (a tenure's attached key
 * too), compare-and-set, grant, and an acquire of a name that has neither a tenure nor a tombstone
 * (any other acquire adds nothing: it is refused by the log, retries the same tenure, or replaces
 * it). Delete, release, revoke, keep-alives and reads are never refused, so a full cluster can be
 * drained. Writes admitted while the count was below the quota but not applied yet can take the
 * state past it, by at most what is in flight: per connection {@code
 * --max-in-flight-per-connection} calls (a batch's ops each), each no larger than a key and a
 * value may be. That bound is what a node's heap must leave room for above the quota, and it
 * keeps the state bounded, which is what the quota is for; an exact quota would need the check in
 * the log, applied alike on every replica.
 */
public final class LimitChecks {

  private static final String WATCH = LeaseholdGrpc.getWatchMethod().getFullMethodName();

  /** What one client connection holds open: counted by the interceptor. */
  static final class Connection {
    final AtomicInteger inFlight = new AtomicInteger();
    final AtomicInteger watchers = new AtomicInteger();
  }

  static final Attributes.Key<Connection> CONNECTION = Attributes.Key.create("leasehold.connection");

  private final Limits limits;
  private final CoreState state;

  public LimitChecks(Limits limits, CoreState state) {
    this.limits = limits;
    this.state = state;
  }

  /** {@return the limits checked} */
  Limits limits() {
    return limits;
  }

  /** Refuses a get over a limit: ends {@code out} with {@code RESOURCE_EXHAUSTED} (writes: {@link #overLimit}). */
  boolean refused(GetRequest get, StreamObserver<?> out) {
    String over = get.getPrefix() ? null : keyOverLimit(get.getKey());
    if (over != null) {
      out.onError(Status.RESOURCE_EXHAUSTED.withDescription(over + "; nothing was read").asException());
    }
    return over != null;
  }

  /**
   * Refuses a watch whose key or prefix is longer than any key may be (such a prefix could match
   * nothing): ends {@code out} with {@code RESOURCE_EXHAUSTED} naming the field and its range.
   */
  boolean refused(WatchRequest watch, StreamObserver<?> out) {
    String over = keyOverLimit(watch.getKey());
    if (over != null) {
      out.onError(
          Status.RESOURCE_EXHAUSTED
              .withDescription(
                  (watch.getPrefix() ? "key (the watched prefix): " : "key (the watched key): ") + over
                      + " (a key may have 1 to " + maxKeyBytesFor(watch.getKey()) + " bytes); nothing was watched")
              .asException());
    }
    return over != null;
  }

  private int maxKeyBytesFor(String key) {
    return key.startsWith(CoreState.RESERVED_PREFIX) ? Limits.MOST_KEY_BYTES : limits.maxKeyBytes();
  }

  /** {@return why a write is over a limit (the flag, its value, what the write had), or null} */
  String overLimit(Command command) {
    String over;
    switch (command.getKindCase()) {
      case PUT -> {
        PutRequest p = command.getPut();
        over = valueOverLimit(p.getValue().size());
        if (over == null && p.hasTenure()) {
          // A tenure's attached key is short by its own rule and belongs to no session: a tenure
          // may have as many as a session may have keys.
          over = attachedOverLimit(p.getTenure().getName(), p.getKey());
        } else if (over == null) {
          over = keyOverLimit(p.getKey());
          if (over == null && p.getSessionId() != 0) {
            over = keysOverLimit(p.getSessionId(), "", p.getKey());
          }
        }
        if (over == null) {
          over = dataOverQuota();
        }
      }
      case DELETE -> over = keyOverLimit(command.getDelete().getKey());
      case COMPARE_AND_SET -> {
        CompareAndSetRequest c = command.getCompareAndSet();
        over = valueOverLimit(c.getValue().size());
        if (over == null) {
          over = keyOverLimit(c.getKey());
        }
        if (over == null && c.getSessionId() != 0) {
          over = keysOverLimit(c.getSessionId(), "", c.getKey());
        }
        if (over == null) {
          over = dataOverQuota();
        }
      }
      case ACQUIRE -> {
        AcquireRequest a = command.getAcquire();
        over = keysOverLimit(a.getSessionId(), CoreState.LEASE_PREFIX, a.getName());
        if (over == null) {
          over = dataOverQuota();
          // Only a name without a tenure or a tombstone gets a new key; looked up at the quota only.
          if (over != null && state.leaseNameInUse(a.getName())) {
            over = null;
          }
        }
      }
      case GRANT -> over = dataOverQuota();
      default -> over = null;
    }
    if (over == null) {
      over = callRecordsOverQuota(command);
    }
    return over == null ? null : over + "; nothing was written";
  }

  /**
   * {@return why a write from a client the state does not remember may not go now, or null} What
   * the state remembers of clients' calls is bounded per client only; calls from ever new client
   * ids (any write, a delete or a refused one too) would grow it without bound. Once it alone
   * holds the quota, only clients it remembers write, until older clients are forgotten; the
   * state then holds at most about twice the quota. Looked up only at the quota.
   */
  private String callRecordsOverQuota(Command command) {
    long records = state.callRecordBytes();
    long max = limits.maxDataBytes();
    if (records < max || state.remembersCaller(command)) {
      return null;
    }
    return "the replicated state remembers " + records + " bytes of clients' calls, at or over --max-data-bytes "
        + max + ": a client it does not know yet may write once calls idle for "
        + CoreState.CALLS_REMEMBERED_MILLIS / 60_000 + " minutes are forgotten (clients it knows still write)";
  }

  /** {@return why no write may add data now (the state holds at least the quota), or null} */
  private String dataOverQuota() {
    long bytes = state.quotaBytes();
    long max = limits.maxDataBytes();
    return bytes < max
        ? null
        : "the replicated state holds " + bytes + " bytes of data and call records, at or over --max-data-bytes " + max
            + ": delete keys, release leases or close sessions to make room (deletes, releases, revokes,"
            + " keep-alives and reads still work)";
  }

  private String attachedOverLimit(String leaseName, String key) {
    int keys = state.attachedAtLimit(leaseName, key, limits.maxKeysPerSession());
    return keys < 0
        ? null
        : "the tenure of lease '" + leaseName + "' has " + keys + " attached keys, the most a tenure may have"
            + " (--max-keys-per-session " + limits.maxKeysPerSession() + "): delete some";
  }

  private String keysOverLimit(long sessionId, String prefix, String name) {
    int keys = state.keysAtLimit(sessionId, prefix, name, limits.maxKeysPerSession());
    return keys < 0
        ? null
        : "session " + sessionId + " has " + keys + " keys, the most --max-keys-per-session allows ("
            + limits.maxKeysPerSession() + "): delete some, or use another session";
  }

  /**
   * Keys a client names are held to {@code --max-key-bytes}; keys under the reserved prefix (a
   * named lease's, up to 1,043 bytes, read and deleted by the library and operators) to the most
   * any key may have, as their names are bounded by the lease-name rule.
   */
  private String keyOverLimit(String key) {
    boolean reserved = key.startsWith(CoreState.RESERVED_PREFIX);
    int max = reserved ? Limits.MOST_KEY_BYTES : limits.maxKeyBytes();
    // A char is at most 3 bytes of UTF-8 (a surrogate pair 4 for two): most keys need no count.
    if ((long) key.length() * 3 <= max) {
      return null;
    }
    int bytes = Utf8.length(key);
    return bytes <= max
        ? null
        : "the key is " + bytes + " bytes of UTF-8, over " + (reserved ? "the most any key may have (" + max + ")" : "--max-key-bytes " + max);
  }

  private String valueOverLimit(int bytes) {
    return bytes <= limits.maxValueBytes()
        ? null
        : "the value is " + bytes + " bytes, over --max-value-bytes " + limits.maxValueBytes();
  }

  /** Client connections open now, and accepted since the node started (each counted once ready). */
  private final AtomicLong connectionsOpen = new AtomicLong();
  private final AtomicLong connectionsAccepted = new AtomicLong();

  /** {@return a filter that gives each new client connection its counters, and counts connections} */
  public ServerTransportFilter transportFilter() {
    return new ServerTransportFilter() {
      @Override
      public Attributes transportReady(Attributes transportAttrs) {
        connectionsAccepted.incrementAndGet();
        connectionsOpen.incrementAndGet();
        return transportAttrs.toBuilder().set(CONNECTION, new Connection()).build();
      }

      @Override
      public void transportTerminated(Attributes transportAttrs) {
        if (transportAttrs != null && transportAttrs.get(CONNECTION) != null) {
          connectionsOpen.decrementAndGet(); // only one that was ready was counted
        }
      }
    };
  }

  /** {@return the client connections open now} */
  public long connectionsOpen() {
    return connectionsOpen.get();
  }

  /** {@return the client connections accepted (handshake done) since the node started} */
  public long connectionsAccepted() {
    return connectionsAccepted.get();
  }

  /**
   * {@return an interceptor that counts each connection's open watches and its other calls, and
   * refuses one over {@code --max-watchers-per-connection} or {@code
   * --max-in-flight-per-connection}}
   */
  public ServerInterceptor interceptor() {
    return new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(
          ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        Connection connection = call.getAttributes().get(CONNECTION);
        if (connection == null) {
          return next.startCall(call, headers); // a transport without the filter (none in a node)
        }
        boolean watch = call.getMethodDescriptor().getFullMethodName().equals(WATCH);
        AtomicInteger open = watch ? connection.watchers : connection.inFlight;
        int max = watch ? limits.maxWatchersPerConnection() : limits.maxInFlightPerConnection();
        if (open.incrementAndGet() > max) {
          open.decrementAndGet();
          call.close(
              Status.RESOURCE_EXHAUSTED.withDescription(
                  watch
                      ? "this connection has " + max + " watches open, the most --max-watchers-per-connection allows ("
                          + max + "): close one, or watch a prefix instead of many keys"
                      : "this connection has " + max + " calls in flight, the most --max-in-flight-per-connection"
                          + " allows (" + max + "): wait for answers before sending more; nothing was done"),
              new Metadata());
          return new ServerCall.Listener<>() {};
        }
        ServerCall.Listener<Q> listener;
        try {
          listener = next.startCall(call, headers);
        } catch (RuntimeException e) {
          open.decrementAndGet();
          throw e;
        }
        // Exactly one of onComplete and onCancel ends every call that started.
        return new SimpleForwardingServerCallListener<>(listener) {
          @Override
          public void onComplete() {
            open.decrementAndGet();
            super.onComplete();
          }

          @Override
          public void onCancel() {
            open.decrementAndGet();
            super.onCancel();
          }
        };
      }
    };
  }
}
