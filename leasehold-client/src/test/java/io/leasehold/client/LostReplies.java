package io.leasehold.client;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.Deadline;
import io.grpc.ForwardingClientCall.SimpleForwardingClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A network that delivers requests but loses (or holds back) the replies of chosen calls on their
 * way back to the client — the fault behind a grant nobody knows of. Put on a client's channel; it
 * acts on the calls of the methods it was told to {@link #lose} or {@link #delay}, started since.
 *
 * <p>A lost reply ends the call as a real one would: by the call's own deadline (a
 * {@code DEADLINE_EXCEEDED} at that time), or never if the call has none. A delayed reply arrives
 * whole, late. The request itself always reaches the server and takes effect there.
 */
final class LostReplies implements ClientInterceptor {

  private final Map<String, AtomicInteger> started = new ConcurrentHashMap<>();
  /** By bare method name: zero, the replies are lost; positive, delayed by that long. */
  private final Map<String, Duration> holdBack = new ConcurrentHashMap<>();
  private final ScheduledExecutorService timer =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "lost-replies");
            t.setDaemon(true);
            return t;
          });
  /**
   * Loses the replies of calls started from now on.
   *
   * @param methods bare gRPC method names, e.g. {@code Acquire}
   */
  void lose(String... methods) {
    for (String m : methods) {
      holdBack.put(m, Duration.ZERO);
    }
  }

  /** Delivers the replies of calls of {@code methods} started from now on {@code by} late. */
  void delay(Duration by, String... methods) {
    for (String m : methods) {
      holdBack.put(m, by);
    }
  }

  /** Lets the replies of every call started from now on through. */
  void pass() {
    holdBack.clear();
  }

  /** {@return how many calls of {@code method} the client started, whatever happened to them} */
  int started(String method) {
    AtomicInteger n = started.get(method);
    return n == null ? 0 : n.get();
  }

  @Override
  public <Q, R> ClientCall<Q, R> interceptCall(
      MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
    String name = method.getBareMethodName();
    ClientCall<Q, R> call = next.newCall(method, options);
    started.computeIfAbsent(name, k -> new AtomicInteger()).incrementAndGet();
    Duration hold = holdBack.get(name);
    if (hold == null) {
      return call;
    }
    Deadline deadline = options.getDeadline();
    return new SimpleForwardingClientCall<>(call) {
      @Override
      public void start(Listener<R> listener, Metadata headers) {
        super.start(hold.isZero() ? losing(listener, deadline) : delaying(listener, hold), headers);
      }
    };
  }

  private <R> ClientCall.Listener<R> losing(ClientCall.Listener<R> out, Deadline deadline) {
    return new ClientCall.Listener<>() {
      @Override
      public void onReady() {
        out.onReady();
      }

      @Override
      public void onClose(Status status, Metadata trailers) {
        Status.Code code = status.getCode();
        if (code == Status.Code.DEADLINE_EXCEEDED || code == Status.Code.CANCELLED) {
          out.onClose(status, trailers); // the client's own deadline or cancel: nothing was lost
        } else if (deadline != null) {
          // The server answered; the answer is lost. The client hears of it only at its deadline.
          timer.schedule(
              () -> out.onClose(Status.DEADLINE_EXCEEDED.withDescription("the reply was lost"), new Metadata()),
              Math.max(0, deadline.timeRemaining(TimeUnit.NANOSECONDS)),
              TimeUnit.NANOSECONDS);
        }
      }
    };
  }

  private <R> ClientCall.Listener<R> delaying(ClientCall.Listener<R> out, Duration hold) {
    List<Runnable> events = new ArrayList<>();
    return new ClientCall.Listener<>() {
      @Override
      public void onHeaders(Metadata headers) {
        events.add(() -> out.onHeaders(headers));
      }

      @Override
      public void onMessage(R message) {
        events.add(() -> out.onMessage(message));
      }

      @Override
      public void onReady() {
        out.onReady();
      }

      @Override
      public void onClose(Status status, Metadata trailers) {
        events.add(() -> out.onClose(status, trailers));
        List<Runnable> all = List.copyOf(events);
        timer.schedule(() -> all.forEach(Runnable::run), hold.toNanos(), TimeUnit.NANOSECONDS);
      }
    };
  }
}
