package io.leasehold.faults;

import com.google.protobuf.ByteString;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseSettings;
import io.leasehold.client.CoreBackendProvider;
import io.leasehold.client.CoreClient;
import io.leasehold.core.proto.CompareAndSetRequest;
import io.leasehold.core.proto.CompareAndSetResponse;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.PutResponse;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * One contending client of the fault harness, in a JVM of its own so that the nemesis can freeze
 * it ({@code SIGSTOP}), kill it or cut it off. For each lease name it contends for, one thread
 * loops: acquire the lease; while holding (0.5–2 s, so the lease changes hands often) ask {@code
 * checkAlive()} and, only when it says true, note it ({@code ALIVE}, flushed) and make a fenced
 * write to that lease's register in the core; then release. All leases of the process share one
 * backend, so one session, as an application's leases would (or, with {@code session-per-lease},
 * each lease has a backend and a session of its own: more sessions for the store to keep). Beside that, a second thread makes
 * plain key-value writes to unique keys. Every event goes to the history file, one flushed line
 * each (format: {@link History}); the parent reads {@code STATE lease held|free} on standard output
 * to know who holds what. A line {@code stop} on standard input (or its end) ends the client
 * cleanly, with an {@code END} for every tenure it holds.
 *
 * <p>Arguments: {@code id leaseUri coreEndpoints leaseNames ttlMillis seed historyFile
 * maxClockDrift [session-per-lease]}, where {@code coreEndpoints} is {@code host:port,...} of the core (through this
 * client's links) and {@code leaseNames} is a comma-separated list.
 */
public final class ClientMain {

  /** Prefix of the register keys, one per lease name: the protected resources. */
  static final String REGISTER_PREFIX = "/faults/register/";
  /** Prefix of the plain KV writes. */
  static final String KV_PREFIX = "/faults/kv/";

  private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  private final String id;
  private final PrintWriter history;
  private final CoreClient core;
  private final Duration ttl;
  private final AtomicLong writeSeq = new AtomicLong();
  private volatile boolean stopping;

  private ClientMain(String id, PrintWriter history, CoreClient core, Duration ttl) {
    this.id = id;
    this.history = history;
    this.core = core;
    this.ttl = ttl;
  }

  /** {@return the register key of {@code lease}} */
  static String register(String lease) {
    return REGISTER_PREFIX + lease;
  }

  /**
   * Runs one client until told to stop.
   *
   * @param args see the class comment
   * @throws IOException if the history file cannot be written
   */
  public static void main(String[] args) throws IOException {
    String id = args[0];
    String leaseUri = args[1];
    String coreEndpoints = args[2];
    List<String> leaseNames = List.of(args[3].split(","));
    Duration ttl = Duration.ofMillis(Long.parseLong(args[4]));
    long seed = Long.parseLong(args[5]);
    Path historyFile = Path.of(args[6]);
    double maxClockDrift = Double.parseDouble(args[7]);
    boolean sessionPerLease = args.length > 8 && args[8].equals("session-per-lease");
    List<LeaseBackend> backends = new ArrayList<>();
    try (PrintWriter history = new PrintWriter(Files.newBufferedWriter(historyFile, StandardCharsets.UTF_8));
        CoreClient core = new CoreClient(CoreBackendProvider.endpoints("leasehold://" + coreEndpoints), Duration.ofMillis(500))) {
      ClientMain client = new ClientMain(id, history, core, ttl);
      Thread stdin = new Thread(client::awaitStop, "stop-reader");
      stdin.setDaemon(true);
      stdin.start();
      Thread kv = new Thread(() -> client.kvLoop(new Random(seed)), "kv-writer");
      kv.setDaemon(true);
      kv.start();
      List<Thread> loops = new ArrayList<>();
      for (int i = 0; i < leaseNames.size(); i++) {
        String name = leaseNames.get(i);
        if (backends.isEmpty() || sessionPerLease) {
          backends.add(LeaseBackend.open(leaseUri));
        }
        Lease lease = backends.get(backends.size() - 1).newLease(LeaseSettings.builder(name, id).ttl(ttl).maxClockDrift(maxClockDrift).build());
        Random random = new Random(seed * 31 + i + 1);
        Thread t = new Thread(() -> client.leaseLoop(name, lease, random), "lease-" + name);
        t.start();
        loops.add(t);
      }
      for (Thread t : loops) {
        try {
          t.join();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      kv.interrupt();
      try {
        kv.join(5_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    } finally {
      backends.forEach(LeaseBackend::close);
    }
    System.out.println("STOPPED");
    System.out.flush();
  }

  private void awaitStop() {
    try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        if (line.trim().equals("stop")) {
          break;
        }
      }
    } catch (IOException ignored) {
      // the parent is gone: stop as well
    }
    stopping = true;
  }

  private void leaseLoop(String name, Lease lease, Random random) {
    AtomicReference<LeaseLost> lost = new AtomicReference<>();
    AtomicLong heldToken = new AtomicLong(-1);
    lease.onLost(l -> {
      // When the store ended the tenure (REVOKED, TAKEN_OVER), the checker compares this instant
      // with the safe deadline the holder last knew: a store may end a live tenure only on an
      // operator's word, never by expiring it before the holder's own deadline.
      record("LOST " + id + " " + name + " " + heldToken.get() + " " + System.nanoTime() + " " + l.kind());
      lost.set(l);
    });
    while (!stopping) {
      long call = System.nanoTime();
      boolean acquired;
      try {
        acquired = lease.acquire().get(ttl.toMillis() * 3, TimeUnit.MILLISECONDS);
      } catch (ExecutionException | TimeoutException e) {
        pause(100 + random.nextInt(200));
        continue; // outcome unknown: ask again
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      long start = System.nanoTime();
      if (!acquired) {
        pause(20 + random.nextInt(100));
        continue;
      }
      OptionalLong token = lease.fencingToken();
      if (token.isEmpty()) {
        record("EMPTY " + id + " " + name + " " + call + " " + start); // lost before we could even look
        continue;
      }
      lost.set(null);
      heldToken.set(token.getAsLong());
      hold(name, lease, token.getAsLong(), call, start, lost, random);
      pause(random.nextInt(300)); // give the others a chance
    }
  }

  private void hold(String name, Lease lease, long token, long call, long start, AtomicReference<LeaseLost> lost,
      Random random) {
    record("START " + id + " " + name + " " + token + " " + call + " " + start);
    state(name, "held");
    long until = start + TimeUnit.MILLISECONDS.toNanos(500 + random.nextInt(1500));
    long lastAlive = -1;
    String reason;
    while (true) {
      // Read the clock first, then ask: a true answer covers the instant read before it, even if
      // the process is frozen between the two.
      long now = System.nanoTime();
      if (!lease.checkAlive()) {
        LeaseLost l = lost.get();
        reason = l == null ? "deadline" : "lost:" + l.kind();
        break;
      }
      lastAlive = now;
      if (stopping) {
        reason = "stopped";
        break;
      }
      if (now - until >= 0) {
        reason = "released";
        break;
      }
      // Flushed before acting: if this process is killed, its history still shows the last
      // instant it acted as holder; and the safe deadline it knew then.
      long safeUntil = System.nanoTime() + lease.remaining().toNanos();
      record("ALIVE " + id + " " + name + " " + token + " " + now + " " + safeUntil);
      fencedWrite(name, token, now);
      LockSupport.parkNanos(POLL_NANOS);
    }
    record("END " + id + " " + name + " " + token + " " + lastAlive + " " + reason);
    state(name, "free");
    if (reason.equals("released") || reason.equals("stopped")) {
      try {
        lease.release().get(ttl.toMillis() * 2, TimeUnit.MILLISECONDS);
      } catch (ExecutionException | TimeoutException e) {
        System.err.println(id + ": release of " + name + " not confirmed (the store lets it expire): " + e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * The register defends itself: a write goes in only by compare-and-set on the revision read,
   * and only if its token is at least the token stored.
   */
  private void fencedWrite(String name, long token, long decided) {
    long seq = writeSeq.incrementAndGet();
    String key = register(name);
    String outcome;
    try {
      outcome = "UNKNOWN cas-conflicts";
      for (int attempt = 0; attempt < 3; attempt++) {
        GetResponse read = await(core.<GetResponse>call((s, o) -> s.get(GetRequest.newBuilder().setKey(key).build(), o)));
        long stored = -1;
        long revision = 0;
        if (read.getKvsCount() > 0) {
          KeyValue kv = read.getKvs(0);
          stored = Long.parseLong(kv.getValue().toStringUtf8().split(" ")[0]);
          revision = kv.getModRevision();
        }
        if (token < stored) {
          outcome = "REJECTED " + stored;
          break;
        }
        CompareAndSetRequest cas = CompareAndSetRequest.newBuilder()
            .setCall(core.newCall())
            .setKey(key)
            .setExpectedModRevision(revision)
            .setValue(ByteString.copyFromUtf8(token + " " + id + " " + seq))
            .build();
        CompareAndSetResponse r = await(core.<CompareAndSetResponse>call((s, o) -> s.compareAndSet(cas, o)));
        if (r.getSucceeded()) {
          outcome = "ACCEPTED " + r.getKv().getModRevision();
          break;
        }
      }
    } catch (Exception e) {
      outcome = "UNKNOWN " + e.getClass().getSimpleName();
    }
    record("WRITE " + id + " " + name + " " + token + " " + seq + " " + decided + " " + System.nanoTime() + " " + outcome);
  }

  private void kvLoop(Random random) {
    long seq = 0;
    while (!stopping && !Thread.currentThread().isInterrupted()) {
      seq++;
      String key = KV_PREFIX + id + "/" + seq;
      long begin = System.nanoTime();
      String outcome;
      try {
        PutRequest put = PutRequest.newBuilder()
            .setCall(core.newCall())
            .setKey(key)
            .setValue(ByteString.copyFromUtf8(Long.toString(begin)))
            .build();
        PutResponse r = await(core.<PutResponse>call((s, o) -> s.put(put, o)));
        outcome = r.hasKv() && r.getKv().getModRevision() > 0 ? "ACKED " + r.getKv().getModRevision() : "UNKNOWN no-kv";
      } catch (Exception e) {
        outcome = "UNKNOWN " + e.getClass().getSimpleName();
      }
      record("KV " + id + " " + seq + " " + key + " " + begin + " " + System.nanoTime() + " " + outcome);
      pause(400 + random.nextInt(200));
    }
  }

  private static <T> T await(java.util.concurrent.CompletableFuture<T> f) throws Exception {
    try {
      return f.get(4, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception c ? c : e;
    }
  }

  private synchronized void record(String line) {
    history.println(line);
    history.flush();
  }

  private static synchronized void state(String lease, String s) {
    System.out.println("STATE " + lease + " " + s);
    System.out.flush();
  }

  private static void pause(long millis) {
    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(millis));
  }
}
