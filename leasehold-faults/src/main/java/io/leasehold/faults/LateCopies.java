package io.leasehold.faults;

import com.google.protobuf.InvalidProtocolBufferException;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.leasehold.core.proto.BatchOp;
import io.leasehold.core.proto.BatchRequest;
import io.leasehold.core.proto.BatchResponse;
import io.leasehold.core.proto.BatchResult;
import io.leasehold.core.proto.CallId;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The late copies of one client's writes ({@link FaultType#LATE_COPY}): while on, each write its
 * {@link CallRelay}s pass on is kept, request bytes unchanged (same client id, same call id), and
 * sent once more after a random delay between {@link #MIN_DELAY} and 2 × TTL, through one of the
 * client's links chosen at random (to the node of the original or another one), as a network that
 * duplicates and delays a message would. The copy's answer never reaches the client: it is logged,
 * and compared with the answer the original got.
 *
 * <p>The core must answer a copy of an applied write from that write's kept reply, or refuse it as
 * too late ({@code TOO_LATE}, status {@code DEADLINE_EXCEEDED}), and never apply it again. So a
 * copy of a write that was answered with success must get the same bytes back or that refusal; a
 * different successful answer means the write was applied twice ({@link Tally#reapplied}).
 */
final class LateCopies implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(LateCopies.class);

  /** The shortest delay of a copy. */
  static final Duration MIN_DELAY = Duration.ofMillis(50);

  private static final MethodDescriptor.Marshaller<byte[]> BYTES = CallRelay.BYTES;

  private final String client;
  private final List<String> targetNames;
  private final List<ManagedChannel> channels = new ArrayList<>();
  private final long maxDelayMillis;
  private final long deadlineMillis;
  private final ScheduledExecutorService timer;
  private final Random random; // guarded by this
  private boolean on; // guarded by this
  private int made; // guarded by this
  private int pending; // guarded by this
  private Tally tally = Tally.NONE; // guarded by this

  /**
   * Makes the copier of one client.
   *
   * @param client the client's slot name, for the log
   * @param targets where copies may go, by name (the client's links to the nodes)
   * @param ttl the leases' TTL: copies wait up to twice that
   * @param seed for the delays and the targets
   */
  LateCopies(String client, Map<String, InetSocketAddress> targets, Duration ttl, long seed) {
    this.client = client;
    this.targetNames = List.copyOf(targets.keySet());
    targets.values().forEach(a -> channels.add(CallRelay.channelTo(a)));
    this.maxDelayMillis = Math.max(MIN_DELAY.toMillis() + 1, 2 * ttl.toMillis());
    this.deadlineMillis = Math.max(10_000, 2 * ttl.toMillis());
    this.random = new Random(seed);
    this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "late-copies-" + client);
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * What became of the copies made since the last {@link #on()}.
   *
   * @param made writes copied (each op of a batch counts)
   * @param same copies answered with the original's very answer: from its kept reply (or the
   *     write is idempotent by itself)
   * @param tooLate copies the core refused as too late ({@code TOO_LATE}): applied already, or
   *     overdue
   * @param reapplied copies of a write answered with success that got another successful answer:
   *     applied a second time
   * @param other copies answered otherwise: the original had no successful answer (the copy may
   *     be its first application), or the copy was turned away (no leader, a cut link)
   * @param firstApplied copies of an acquire the original of which was refused ({@code acquired:
   *     false}) and that got another answer: the leader refuses an acquire of a held name from its
   *     own state, outside the log, so the call is not remembered, and a copy that comes once the
   *     name is free takes it, for a holder that was told no
   */
  record Tally(int made, int same, int tooLate, int reapplied, int other, int firstApplied) {
    static final Tally NONE = new Tally(0, 0, 0, 0, 0, 0);

    Tally(int made, int same, int tooLate, int reapplied, int other) {
      this(made, same, tooLate, reapplied, other, 0);
    }

    Tally times(int n) {
      return new Tally(made * n, same * n, tooLate * n, reapplied * n, other * n, firstApplied * n);
    }

    Tally plus(Tally t) {
      return new Tally(made + t.made, same + t.same, tooLate + t.tooLate, reapplied + t.reapplied, other + t.other,
          firstApplied + t.firstApplied);
    }

    /** {@return the counts as the nemesis log's key=value pairs} */
    Map<String, String> detail() {
      Map<String, String> d = new LinkedHashMap<>();
      d.put("copies", Integer.toString(made));
      d.put("same", Integer.toString(same));
      d.put("too-late", Integer.toString(tooLate));
      d.put("reapplied", Integer.toString(reapplied));
      d.put("other", Integer.toString(other));
      d.put("first-applied", Integer.toString(firstApplied));
      return d;
    }
  }

  /** Starts copying writes, with a fresh tally. */
  synchronized void on() {
    on = true;
    tally = Tally.NONE;
  }

  /** Stops copying new writes; copies already made are still sent. */
  synchronized void off() {
    on = false;
  }

  /** {@return what became of the copies since the last {@link #on()}, as far as they were answered} */
  synchronized Tally tally() {
    return tally;
  }

  /** {@return how many copies are waiting or under way} */
  synchronized int pending() {
    return pending;
  }

  /**
   * Waits until every copy made was sent and answered.
   *
   * @param timeout how long at most
   * @return whether none is left
   */
  boolean awaitSent(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    synchronized (this) {
      while (pending > 0) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return false;
        }
        try {
          TimeUnit.NANOSECONDS.timedWait(this, left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      }
      return true;
    }
  }

  /** {@return the longest a copy waits before it is sent} */
  Duration maxDelay() {
    return Duration.ofMillis(maxDelayMillis);
  }

  /** {@return how long a copy may take once sent} */
  Duration copyDeadline() {
    return Duration.ofMillis(deadlineMillis);
  }

  /**
   * Keeps a copy of a write, if copying is on, and schedules it.
   *
   * @param method the full method name
   * @param request the request's bytes, as the client sent them
   * @param headers the request's headers (without the deadline)
   * @return the copy, to be told the original's answer; null when off
   */
  Copy offer(String method, byte[] request, Metadata headers) {
    Copy c;
    synchronized (this) {
      if (!on) {
        return null;
      }
      int target = random.nextInt(channels.size());
      long delay = MIN_DELAY.toMillis() + (long) (random.nextDouble() * (maxDelayMillis - MIN_DELAY.toMillis()));
      c = new Copy(++made, method, request.clone(), headers, target, delay);
      pending++;
      tally = tally.plus(new Tally(writesIn(method, request), 0, 0, 0, 0));
    }
    timer.schedule(c::send, c.delayMillis, TimeUnit.MILLISECONDS);
    return c;
  }

  private synchronized void done(Tally t) {
    tally = tally.plus(t);
    pending--;
    notifyAll();
  }

  @Override
  public void close() {
    timer.shutdownNow();
    channels.forEach(ManagedChannel::shutdownNow);
  }

  /** One late copy of one write. */
  final class Copy {
    final int id;
    final String method;
    final byte[] request;
    final Metadata headers;
    final int target;
    final long delayMillis;
    private Status originalStatus; // guarded by this
    private byte[] originalAnswer; // guarded by this

    Copy(int id, String method, byte[] request, Metadata headers, int target, long delayMillis) {
      this.id = id;
      this.method = method;
      this.request = request;
      this.headers = headers;
      this.target = target;
      this.delayMillis = delayMillis;
    }

    /**
     * Notes the original's answer.
     *
     * @param status how it ended
     * @param answer its response (null when it failed)
     */
    synchronized void originalAnswered(Status status, byte[] answer) {
      if (originalStatus == null) {
        originalStatus = status;
        originalAnswer = answer == null ? null : answer.clone();
      }
    }

    private synchronized byte[] originalOk() {
      return originalStatus != null && originalStatus.isOk() ? originalAnswer : null;
    }

    private synchronized String original() {
      return originalStatus == null ? "no answer yet" : originalStatus.isOk() ? "OK" : originalStatus.getCode().toString();
    }

    void send() {
      MethodDescriptor<byte[], byte[]> md = MethodDescriptor.<byte[], byte[]>newBuilder()
          .setFullMethodName(method)
          .setType(MethodDescriptor.MethodType.UNARY)
          .setRequestMarshaller(BYTES)
          .setResponseMarshaller(BYTES)
          .build();
      ClientCall<byte[], byte[]> call;
      try {
        call = channels.get(target).newCall(md, CallOptions.DEFAULT.withDeadlineAfter(deadlineMillis, TimeUnit.MILLISECONDS));
      } catch (RuntimeException e) {
        finish(Status.fromThrowable(e), null);
        return;
      }
      Metadata h = new Metadata();
      h.merge(headers);
      call.start(new ClientCall.Listener<>() {
        private byte[] answer;

        @Override
        public void onMessage(byte[] message) {
          answer = message;
        }

        @Override
        public void onClose(Status status, Metadata trailers) {
          finish(status, answer);
        }
      }, h);
      call.request(2);
      call.sendMessage(request);
      call.halfClose();
    }

    private void finish(Status status, byte[] answer) {
      Tally t;
      String what;
      try {
        if (method.endsWith("/Batch")) {
          t = batch(status, answer);
        } else if (status.isOk() && method.endsWith("/Acquire")) {
          t = acquire(answer, originalOk());
        } else {
          t = single(status, answer, originalOk());
        }
        what = describe(t);
      } catch (InvalidProtocolBufferException | RuntimeException e) {
        t = new Tally(0, 0, 0, 0, 1);
        what = "unreadable: " + e;
      }
      log.info("late copy {} of {}: {} ({}) through {}, {} ms after the original (answered {}): {}{}",
          id, client, method.substring(method.lastIndexOf('/') + 1), calls(), targetNames.get(target), delayMillis,
          original(), what, status.isOk() ? "" : " [" + status.getCode() + ": " + status.getDescription() + "]");
      done(t);
    }

    private Tally batch(Status status, byte[] answer) throws InvalidProtocolBufferException {
      BatchRequest sent = BatchRequest.parseFrom(request);
      if (!status.isOk()) {
        return single(status, answer, null).times(sent.getOpsCount());
      }
      byte[] ok = originalOk();
      List<BatchResult> mine = BatchResponse.parseFrom(answer).getResultsList();
      List<BatchResult> theirs = ok == null ? List.of() : BatchResponse.parseFrom(ok).getResultsList();
      Tally t = Tally.NONE;
      for (int i = 0; i < mine.size(); i++) {
        BatchResult r = mine.get(i);
        BatchResult o = i < theirs.size() ? theirs.get(i) : null;
        if (r.hasError()) {
          Status s = Status.fromCodeValue(r.getError().getCode()).withDescription(r.getError().getMessage());
          t = t.plus(single(s, null, null));
        } else {
          byte[] orig = o != null && o.hasResponse() ? o.getResponse().toByteArray() : null;
          boolean acquire = sent.getOps(i).hasAcquire();
          t = t.plus(acquire ? acquire(r.getResponse().toByteArray(), orig) : single(Status.OK, r.getResponse().toByteArray(), orig));
        }
      }
      return t;
    }

    /** The call ids of the write, for the log. */
    private String calls() {
      try {
        List<String> ids = new ArrayList<>();
        if (method.endsWith("/Batch")) {
          for (BatchOp op : BatchRequest.parseFrom(request).getOpsList()) {
            ids.add(op.getKindCase().name().toLowerCase(java.util.Locale.ROOT) + " call " + callOf(op).getCallId());
          }
        } else {
          // Every write request has its CallId as field 1.
          ids.add("call " + io.leasehold.core.proto.PutRequest.parseFrom(request).getCall().getCallId());
        }
        return String.join(", ", ids);
      } catch (InvalidProtocolBufferException e) {
        return "unreadable request";
      }
    }
  }

  /** A copy answered with {@code status} and {@code answer}; {@code original} the original's successful answer, or null. */
  private static Tally single(Status status, byte[] answer, byte[] original) {
    if (status.isOk()) {
      if (original == null) {
        return new Tally(0, 0, 0, 0, 1);
      }
      return Arrays.equals(answer, original) ? new Tally(0, 1, 0, 0, 0) : new Tally(0, 0, 0, 1, 0);
    }
    String d = status.getDescription();
    if (status.getCode() == Status.Code.DEADLINE_EXCEEDED && d != null && d.contains("not applied")) {
      return new Tally(0, 0, 1, 0, 0);
    }
    return new Tally(0, 0, 0, 0, 1);
  }

  /** {@return how many writes a request holds: a batch's ops, else 1} */
  private static int writesIn(String method, byte[] request) {
    if (!method.endsWith("/Batch")) {
      return 1;
    }
    try {
      return BatchRequest.parseFrom(request).getOpsCount();
    } catch (InvalidProtocolBufferException e) {
      return 1;
    }
  }

  /**
   * A successful answer to a copy of an acquire. Only a grant can be a second application: a
   * refusal ({@code acquired: false}) changes nothing, whatever the original got. The leader
   * answers an acquire of a name someone else holds from its state, before the call's kept reply
   * is looked up, so a copy of a granted acquire that arrives after the name changed hands is
   * refused, and that is no write applied twice. See {@link Tally#firstApplied} for a grant to a
   * copy of a refused one.
   */
  static Tally acquire(byte[] answer, byte[] original) throws InvalidProtocolBufferException {
    if (original == null || Arrays.equals(answer, original)) {
      return single(Status.OK, answer, original);
    }
    boolean copyGranted = io.leasehold.core.proto.AcquireResponse.parseFrom(answer).getAcquired();
    if (!copyGranted) {
      return new Tally(0, 0, 0, 0, 1);
    }
    boolean originalGranted = io.leasehold.core.proto.AcquireResponse.parseFrom(original).getAcquired();
    return originalGranted ? new Tally(0, 0, 0, 1, 0) : new Tally(0, 0, 0, 0, 0, 1);
  }

  private static String describe(Tally t) {
    List<String> parts = new ArrayList<>();
    if (t.same() > 0) {
      parts.add(t.same() + " answered as the original");
    }
    if (t.tooLate() > 0) {
      parts.add(t.tooLate() + " refused as too late");
    }
    if (t.reapplied() > 0) {
      parts.add(t.reapplied() + " APPLIED AGAIN (another successful answer than the original's)");
    }
    if (t.firstApplied() > 0) {
      parts.add(t.firstApplied() + " acquire refused outside the log, answered anew (the copy went through the log)");
    }
    if (t.other() > 0) {
      parts.add(t.other() + " otherwise");
    }
    return String.join(", ", parts);
  }

  private static CallId callOf(BatchOp op) {
    return switch (op.getKindCase()) {
      case GRANT -> op.getGrant().getCall();
      case REVOKE -> op.getRevoke().getCall();
      case PUT -> op.getPut().getCall();
      case DELETE -> op.getDelete().getCall();
      case COMPARE_AND_SET -> op.getCompareAndSet().getCall();
      case ACQUIRE -> op.getAcquire().getCall();
      case RELEASE -> op.getRelease().getCall();
      default -> CallId.getDefaultInstance();
    };
  }
}
