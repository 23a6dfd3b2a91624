package io.leasehold.server.raft;

import io.leasehold.server.replicated.CoreState;

import io.leasehold.LeaseLost;
import io.leasehold.LeaseSettings;
import io.leasehold.LeaseTimeoutException;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.DeleteCauses;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.RevokedTenure;
import io.leasehold.core.proto.Event;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.core.proto.KeepAliveResponse;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.ReleaseRequest;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Failure;
import io.leasehold.server.state.Heard;
import io.leasehold.server.state.Reply;
import io.leasehold.spi.AcquireResult;
import io.leasehold.spi.LeaseRuntime;
import io.leasehold.spi.LeaseStore;
import io.leasehold.spi.ManagedLease;
import io.leasehold.spi.OpenLeases;
import io.leasehold.spi.ProcessGate;
import io.leasehold.spi.RenewResult;
import io.leasehold.spi.Tenure;
import io.leasehold.spi.VirtualClock;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * A deterministic simulation of the core's decisions and of a client holding leases through it,
 * on one virtual clock, joined by a network that delays, duplicates, reorders and drops every
 * call and every reply. One seed, one history: a failing seed runs again the same way.
 *
 * <p><b>What is real.</b> The replicated state ({@link CoreState}: retried calls, sessions, keys,
 * the acquire and release rules, snapshots), the leader's session deadlines and expiry ({@link
 * SessionKeeper}, {@link SessionExpiry}, {@link ClusterClock}, with re-arming and quiet sessions
 * at every leader change), and on the client side the holder engine ({@code ManagedLease}: the
 * local safe deadline, renewals, retries, loss handlers) with each process's threads behind a
 * {@link ProcessGate} so that a whole process can freeze. <b>What is a model.</b> Raft itself
 * (one log, applied in the order calls reach the leader; a leader change is a new term on
 * another node, whose deadlines are re-armed as {@code SessionExpiry} does), and the client
 * library's session policy ({@link SimClient}: as {@code CoreLeaseStore} and {@code Sessions}
 * do it — one shared session per process, kept alive every TTL/4, an attempt whose outcome is
 * unknown retires its session, a retired session lapses once nothing believed is on it).
 *
 * <p><b>What it checks, at every simulated instant</b> (a check every millisecond, and at every
 * delete the state makes): no two processes believe they hold one name at once (believing:
 * {@code checkAlive()} is true, or its loss handler is still stopping the work); the fencing token
 * of every new tenure is greater than every earlier one of its name; and the store never ends a
 * tenure (expiry, replacement) while its holder still believes in it — the holder must have been
 * told, or its safe window must have passed, first.
 */
public final class CoreSimulation {

  /** What the network and the faults do; every probability is per message or per step. */
  record Faults(
      double lateCopy,
      Duration longestLateCopy,
      double duplicate,
      double drop,
      Duration leaderChangeEvery,
      double pause,
      Duration longestPause,
      Duration longestHandler,
      Duration snapshotEvery,
      double operatorRevoke) {

    /** The shapes this simulation is for: every fault, often. */
    static Faults standard() {
      return new Faults(
          0.03, Duration.ofSeconds(12), 0.05, 0.02, Duration.ofSeconds(4), 0.02, Duration.ofSeconds(4),
          Duration.ofMillis(400), Duration.ofSeconds(3), 0.01);
    }
  }

  /** One broken rule, with the simulated time it was seen at. */
  record Violation(long atMillis, String what) {
    @Override
    public String toString() {
      return "at " + atMillis + " ms: " + what;
    }
  }

  static final String LEASE_PREFIX = CoreState.LEASE_PREFIX;
  private static final long ORIGIN = Long.MAX_VALUE - Duration.ofDays(1).toNanos();
  private static final Duration TTL = Duration.ofSeconds(2);
  private static final long MS = 1_000_000L;

  private final long seed;
  private final Random random;
  private final Faults faults;
  private final VirtualClock clock = new VirtualClock(ORIGIN);
  private final CoreState state = new CoreState();
  private final Node[] nodes = new Node[3];
  private int leader;
  private long term = 1;
  private long index;
  private final List<SimClient> clients = new ArrayList<>();
  private final List<String> names;
  private final List<Violation> violations = new ArrayList<>();
  /** The greatest token granted per name. */
  private final Map<String, Long> greatestToken = new LinkedHashMap<>();
  private long lastSnapshot = ORIGIN;
  private int leaderChanges;
  private int pauses;
  private int tenures;
  private int lateCopies;
  private int revokes;
  private long operatorCalls;

  private CoreSimulation(long seed, Faults faults, int processes, int leaseNames) {
    this.seed = seed;
    this.random = new Random(seed);
    this.faults = faults;
    List<String> n = new ArrayList<>();
    for (int i = 0; i < leaseNames; i++) {
      n.add("job-" + i);
    }
    this.names = List.copyOf(n);
    for (int i = 0; i < nodes.length; i++) {
      nodes[i] = new Node(i);
    }
    for (int i = 0; i < processes; i++) {
      clients.add(new SimClient(i));
    }
  }

  /**
   * Runs one seed.
   *
   * @param seed the seed; the same seed gives the same history
   * @param faults what goes wrong, how often
   * @param runFor simulated time
   * @return what broke the rules (empty when nothing did), and counts of what happened
   */
  static Outcome run(long seed, Faults faults, Duration runFor) {
    CoreSimulation sim = new CoreSimulation(seed, faults, 3, 2);
    return sim.runFor(runFor);
  }

  /** What a run saw. */
  record Outcome(
      long seed, List<Violation> violations, int tenures, int leaderChanges, int pauses, int lateCopies, int revokes) {
    @Override
    public String toString() {
      return "seed " + seed + ": " + tenures + " tenures, " + leaderChanges + " leader changes, " + pauses
          + " pauses, " + lateCopies + " late copies, " + revokes + " operator revokes; "
          + (violations.isEmpty() ? "no violation" : violations);
    }
  }

  private Outcome runFor(Duration runFor) {
    for (Node n : nodes) {
      every(Duration.ofMillis(20), () -> n.expiry.tick());
    }
    every(Duration.ofMillis(1), this::checkBeliefs);
    every(Duration.ofMillis(100), this::maybeFault);
    clients.forEach(SimClient::start);
    long steps = runFor.toMillis();
    for (long i = 0; i < steps && violations.isEmpty(); i++) {
      clock.advance(Duration.ofMillis(1));
    }
    return new Outcome(seed, List.copyOf(violations), tenures, leaderChanges, pauses, lateCopies, revokes);
  }

  private long nowMillis() {
    return (clock.read() - ORIGIN) / MS;
  }

  private void violation(String what) {
    if (violations.isEmpty() && TRACE) {
      trace.forEach(System.out::println);
    }
    if (violations.size() < 5) {
      violations.add(new Violation(nowMillis(), what));
    }
  }

  /** With -Dleasehold.sim.trace=true, the run's last events are printed at its first violation. */
  private static final boolean TRACE = Boolean.getBoolean("leasehold.sim.trace");
  private final java.util.ArrayDeque<String> trace = new java.util.ArrayDeque<>();

  private void trace(String what) {
    if (TRACE) {
      if (trace.size() > 60) {
        trace.pollFirst();
      }
      trace.add(nowMillis() + " ms: " + what);
    }
  }

  private void every(Duration period, Runnable task) {
    clock.schedule(
        new Runnable() {
          @Override
          public void run() {
            task.run();
            clock.schedule(this, period.toNanos());
          }
        },
        period.toNanos());
  }

  // ---------------------------------------------------------------------------------------------
  // Faults.

  private void maybeFault() {
    if (random.nextDouble() < 100.0 / faults.leaderChangeEvery().toMillis()) {
      leader = (leader + 1 + random.nextInt(nodes.length - 1)) % nodes.length;
      term++;
      trace("leader n" + leader + " term " + term);
      leaderChanges++;
    }
    for (SimClient c : clients) {
      if (c.gate.state() == ProcessGate.State.RUNNING && random.nextDouble() < faults.pause()) {
        c.gate.pause();
        trace("process " + c.id + " paused");
        pauses++;
        clock.schedule(c.gate::resume, Math.max(MS, (long) (random.nextDouble() * faults.longestPause().toNanos())));
      }
    }
    if (random.nextDouble() < faults.operatorRevoke()) {
      // An operator deletes a lease's key, whoever holds it: the tombstone must keep the name
      // from everyone else until the holder stopped.
      String name = names.get(random.nextInt(names.size()));
      atLeader(() -> append(
          Command.newBuilder()
              .setDelete(DeleteRequest.newBuilder().setCall(
                  CallId.newBuilder().setClientIdHigh(999).setClientIdLow(seed).setCallId(++operatorCalls))
                  .setKey(LEASE_PREFIX + name))
              .build()));
      revokes++;
    }
    if (clock.read() - lastSnapshot > faults.snapshotEvery().toNanos()) {
      lastSnapshot = clock.read();
      throughSnapshot(state); // a node restarts from its snapshot, or one is installed
    }
  }

  /** Writes the state to a snapshot and reads it back in its place: what survives is what a snapshot keeps. */
  private static void throughSnapshot(CoreState live) {
    try {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      live.writeSnapshot(bytes);
      live.readSnapshot(new ByteArrayInputStream(bytes.toByteArray()));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // The core: one replicated state, three nodes' leader-side deadlines.

  private final class Node {
    final int id;
    final SessionKeeper keeper = new SessionKeeper(clock::read);
    final ClusterClock clusterClock = new ClusterClock(clock::read);
    final SessionExpiry expiry;

    Node(int id) {
      this.id = id;
      this.expiry =
          new SessionExpiry(
              "n" + id,
              keeper,
              state,
              clusterClock,
              new SessionExpiry.Leadership() {
                @Override
                public boolean isReadyLeader() {
                  return leader == id;
                }

                @Override
                public long currentTerm() {
                  return term;
                }
              },
              command -> leader == id
                  ? CompletableFuture.completedFuture(append(command))
                  : CompletableFuture.failedFuture(new IllegalStateException("n" + id + " does not lead")));
    }

    boolean serving() {
      return leader == id && keeper.armedTerm() == term;
    }
  }

  private Node leaderNode() {
    return nodes[leader];
  }

  /** Appends a command to the log and applies it: the leader's stamp, then every node learns. */
  private Reply append(Command command) {
    Node l = leaderNode();
    Command stamped = command.toBuilder().setStampMillis(l.clusterClock.leaderNow(term)).build();
    CoreState.Applied applied = state.apply(++index, term, stamped);
    for (Node n : nodes) {
      n.clusterClock.applied(stamped.getStampMillis());
      if (applied.change() instanceof CoreState.Change.Granted g) {
        n.keeper.granted(g.sessionId(), g.ttlMillis());
      } else if (applied.change() instanceof CoreState.Change.Ended e) {
        n.keeper.ended(e.sessionId());
      }
    }
    trace("applied " + command.getKindCase() + " " + shortly(command) + " -> " + shortly(applied.reply()));
    for (Event e : applied.events()) {
      if (e.getType() == Event.Type.DELETE && e.getKv().getKey().startsWith(LEASE_PREFIX)) {
        storeEnded(e.getKv().getKey().substring(LEASE_PREFIX.length()), e.getKv().getCreateRevision(), e.getCause());
      }
    }
    return applied.reply();
  }

  private static String shortly(Object message) {
    String text = message.toString().replaceAll("\\s+", " ");
    return text.length() > 160 ? text.substring(0, 160) : text;
  }

  /** Runs {@code handle} at the leader once a message reaches it (later if no leader serves yet). */
  private void atLeader(Runnable handle) {
    if (leaderNode().serving()) {
      handle.run();
    } else {
      clock.schedule(() -> atLeader(handle), 5 * MS);
    }
  }

  private KeepAliveResponse keepAlive(List<Long> sessionIds) {
    Node l = leaderNode();
    KeepAliveResponse.Builder response = KeepAliveResponse.newBuilder();
    List<Long> quiet = new ArrayList<>();
    Map<Long, Long> epochs = new LinkedHashMap<>();
    for (long id : sessionIds) {
      CoreState.SessionStatus status = state.keepAlive(id, "", response);
      long result =
          status == CoreState.SessionStatus.GONE
              ? SessionKeeper.GONE
              : l.keeper.keepAlive(id, term, status == CoreState.SessionStatus.QUIET);
      if (result == SessionKeeper.ALIVE) {
        response.addAlive(id);
      } else if (result == SessionKeeper.GONE) {
        response.addGone(id);
      } else {
        quiet.add(id);
        epochs.put(id, result);
      }
    }
    if (!quiet.isEmpty()) {
      // As the state machine does: a Heard entry first, then the confirmation.
      append(Command.newBuilder().setHeard(Heard.newBuilder().addAllSessionIds(quiet)).build());
      for (long id : quiet) {
        long result = state.hasSession(id) ? l.keeper.confirmHeard(id, term, epochs.get(id)) : SessionKeeper.GONE;
        if (result == SessionKeeper.ALIVE) {
          response.addAlive(id);
        } else if (result == SessionKeeper.GONE) {
          response.addGone(id);
        }
      }
    }
    return response.build();
  }

  // ---------------------------------------------------------------------------------------------
  // The network: each message late, twice, or never.

  /** Delivers {@code deliver} after a network delay; maybe twice, maybe never, maybe very late. */
  private void send(Runnable deliver, boolean mayBeLate) {
    if (random.nextDouble() < faults.drop()) {
      return;
    }
    clock.schedule(deliver, delay(mayBeLate));
    if (random.nextDouble() < faults.duplicate()) {
      clock.schedule(deliver, delay(mayBeLate));
    }
  }

  private long delay(boolean mayBeLate) {
    if (mayBeLate && random.nextDouble() < faults.lateCopy()) {
      lateCopies++;
      return (long) (random.nextDouble() * faults.longestLateCopy().toNanos());
    }
    return (long) ((0.2 + random.nextDouble() * 3) * MS);
  }

  // ---------------------------------------------------------------------------------------------
  // The checks.

  private void checkBeliefs() {
    for (String name : names) {
      SimClient believer = null;
      for (SimClient c : clients) {
        if (c.believes(name)) {
          if (believer != null) {
            violation(
                "two holders believe they hold '" + name + "': process " + believer.id + " (token "
                    + believer.leases.get(name).fencingToken() + ") and process " + c.id + " (token "
                    + c.leases.get(name).fencingToken() + ")");
          }
          believer = c;
        }
      }
    }
  }

  /** The state deleted a lease key: its holder must no longer believe in that tenure. */
  private void storeEnded(String name, long token, String cause) {
    if (DeleteCauses.REVOKED_BY_OPERATOR.equals(cause)) {
      return; // the key goes, the tenure stays as a tombstone until its holder stopped
    }
    for (SimClient c : clients) {
      ManagedLease lease = c.leases.get(name);
      if (lease != null && lease.checkAlive() && lease.fencingToken().orElse(-1) == token) {
        violation(
            "the store ended tenure " + token + " of '" + name + "' (" + cause + ") while process " + c.id
                + " still believed in it, " + lease.remaining().toMillis() + " ms before its deadline");
      }
    }
  }

  private void acquired(SimClient c, String name, long token) {
    long before = greatestToken.getOrDefault(name, 0L);
    if (token > before) {
      greatestToken.put(name, token);
      tenures++;
    } else if (token < before) {
      violation("process " + c.id + " acquired '" + name + "' with token " + token + ", not above " + before);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // A client process: the holder engine on a model of the core client's session policy.

  /** One process: its gate, its leases, and the store the engine talks to. */
  private final class SimClient implements LeaseStore {
    final int id;
    final ProcessGate gate = new ProcessGate();
    final LeaseRuntime runtime = gate.wrap(LeaseRuntime.of(clock, clock, clock));
    final OpenLeases open;
    final Map<String, ManagedLease> leases = new LinkedHashMap<>();
    final Map<String, Boolean> stopping = new LinkedHashMap<>();
    final Map<String, Long> heldSince = new LinkedHashMap<>();
    /** Each name's local safe deadline as last seen while held (the checks run every millisecond). */
    final Map<String, Long> deadline = new LinkedHashMap<>();
    /** The deadline of the tenure whose loss handler runs. */
    final Map<String, Long> lostDeadline = new LinkedHashMap<>();
    long marginNanos;
    final Map<Long, Session> held = new LinkedHashMap<>();
    final List<Session> sessions = new ArrayList<>();
    Session current;
    long calls;
    final long intervalNanos = TTL.toNanos() / 4;

    final class Session {
      long sessionId; // 0 while granting
      long confirmedSentAt;
      boolean retired;
      boolean ended;
      int pins;
      final List<CompletableFuture<Boolean>> waiting = new ArrayList<>();
      CompletableFuture<Session> granted = new CompletableFuture<>();
    }

    SimClient(int id) {
      this.id = id;
      this.open = new OpenLeases("sim-" + id);
      for (String name : names) {
        LeaseSettings settings =
            LeaseSettings.builder(name, "process-" + id)
                .ttl(TTL)
                .operationTimeout(Duration.ofMillis(600))
                .acquireRetries(2)
                .retryInterval(Duration.ofMillis(100))
                .build();
        marginNanos =
            TTL.toNanos() - (long) (TTL.toNanos() * (1 - settings.maxClockDrift())) + settings.safetyMargin().toNanos();
        ManagedLease lease = open.newLease(settings, this, runtime);
        lease.onLost(lost -> {
          trace("process " + id + " lost " + name + ": " + lost);
          stopWork(name);
        });
        leases.put(name, lease);
        stopping.put(name, false);
      }
    }

    /** A loss handler that takes time to stop the work: the name is believed in until it returns. */
    private void stopWork(String name) {
      lostDeadline.put(name, deadline.get(name));
      stopping.put(name, true);
      clock.advance(Duration.ofNanos((long) (random.nextDouble() * faults.longestHandler().toNanos())));
      stopping.put(name, false);
    }

    /**
     * Whether the process acts as the name's holder: {@code checkAlive()} says so, or its loss
     * handler is still stopping the work within the margin the store leaves it. The store may
     * hand the name on once a TTL passed since it received the last renewal, which is no sooner
     * than the local deadline plus the margin (TTL minus the safe window): a handler still running
     * after that is outside the contract (Lease#onLost: stop at once), not a violation.
     */
    boolean believes(String name) {
      ManagedLease lease = leases.get(name);
      if (lease.checkAlive()) {
        deadline.put(name, clock.read() + lease.remaining().toNanos());
        return true;
      }
      Long last = lostDeadline.get(name);
      return stopping.get(name) && last != null && clock.read() - (last + marginNanos) < 0;
    }

    void start() {
      runtime.timers().schedule(this::keepAliveRound, intervalNanos);
      for (String name : names) {
        runtime.timers().schedule(() -> work(name), (long) (random.nextDouble() * 200 * MS));
      }
    }

    /** What a user's loop does: acquire when not holding, release after a while. */
    private void work(String name) {
      ManagedLease lease = leases.get(name);
      if (stopping.get(name)) {
        // The loss handler still stops the work (on this one simulated thread, a call from here
        // would look like the handler's own, which the engine lets through at once).
      } else if (lease.checkAlive()) {
        Long since = heldSince.get(name);
        if (since != null && clock.read() - since > (long) (random.nextDouble() * 6 * TTL.toNanos())) {
          heldSince.remove(name);
          trace("process " + id + " releases " + name + " token " + lease.fencingToken());
          lease.release();
        }
      } else {
        lease.acquire().thenAccept(got -> {
          if (got) {
            heldSince.putIfAbsent(name, clock.read());
            acquired(this, name, lease.fencingToken().orElseThrow());
          }
        });
      }
      runtime.timers().schedule(() -> work(name), (long) ((50 + random.nextDouble() * 250) * MS));
    }

    private CallId newCall() {
      return CallId.newBuilder().setClientIdHigh(1000 + id).setClientIdLow(seed).setCallId(++calls).build();
    }

    /** Sends a write to the leader and delivers its reply to this process; a late copy is possible. */
    private void call(Command command, Consumer<Reply> onReply) {
      Command received = command.toBuilder().setReceivedMillis(nodes[0].clusterClock.estimate()).build();
      send(() -> atLeader(() -> {
        Reply reply = append(received);
        send(() -> runtime.callbacks().execute(() -> onReply.accept(reply)), false);
      }), true);
    }

    private <T> CompletableFuture<T> within(CompletableFuture<T> future, long nanos, String what) {
      runtime.timers().schedule(
          () -> future.completeExceptionally(new LeaseTimeoutException(what + " timed out", null)), nanos);
      return future;
    }

    // The session policy (as the core client's Sessions).

    private CompletableFuture<Session> session() {
      if (current != null && !current.retired && !current.ended) {
        return current.granted;
      }
      Session s = new Session();
      current = s;
      sessions.add(s);
      grant(s, newCall(), clock.read());
      return s.granted;
    }

    private void grant(Session s, CallId call, long sentAt) {
      Command grant =
          Command.newBuilder()
              .setGrant(GrantRequest.newBuilder().setCall(call).setOwner("process-" + id).setTtlMillis(TTL.toMillis()))
              .build();
      call(grant, reply -> {
        if (s.granted.isDone() || !reply.hasOk()) {
          return;
        }
        try {
          s.sessionId = GrantResponse.parseFrom(reply.getOk()).getSessionId();
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
        s.confirmedSentAt = sentAt;
        s.granted.complete(s);
      });
      // No answer in time: the same call again (applied once), as the client retries a grant.
      // The session lives from the first copy's arrival, so it counts from the first send.
      runtime.timers().schedule(() -> {
        if (!s.granted.isDone()) {
          grant(s, call, sentAt);
        }
      }, 500 * MS);
    }

    private void retire(Session s) {
      s.retired = true;
    }

    private void keepAliveRound() {
      List<Long> ids = new ArrayList<>();
      List<Session> asked = new ArrayList<>();
      for (Session s : sessions) {
        if (s.sessionId != 0 && !s.ended && (!s.retired || s.pins > 0)) {
          ids.add(s.sessionId);
          asked.add(s);
        }
      }
      long sentAt = clock.read();
      if (!ids.isEmpty()) {
        send(() -> atLeader(() -> {
          KeepAliveResponse response = keepAlive(ids);
          send(() -> runtime.callbacks().execute(() -> heard(asked, response, sentAt)), false);
        }), true);
      }
      runtime.timers().schedule(this::keepAliveRound, intervalNanos);
    }

    private void heard(List<Session> asked, KeepAliveResponse response, long sentAt) {
      for (RevokedTenure revoked : response.getRevokedList()) {
        // As CoreLeaseStore: a revoked tenure of ours ends at once here; its release, after the
        // handlers, ends the tombstone.
        Session s = held.get(revoked.getToken());
        ManagedLease lease = leases.get(revoked.getName());
        if (s != null && lease != null) {
          trace("process " + id + " told tenure " + revoked.getToken() + " of " + revoked.getName() + " was revoked");
          lease.storeReportedLoss(revoked.getToken(), new LeaseLost(LeaseLost.Kind.REVOKED, "revoked by an operator"));
        }
      }
      for (Session s : asked) {
        trace("process " + id + " keep-alive sent " + (sentAt - ORIGIN) / MS + ": " + shortly(response));
        if (response.getAliveList().contains(s.sessionId)) {
          if (sentAt - s.confirmedSentAt > 0) {
            s.confirmedSentAt = sentAt;
          }
          complete(s, true);
        } else if (response.getGoneList().contains(s.sessionId)) {
          s.ended = true;
          complete(s, false);
        }
      }
    }

    private void complete(Session s, boolean alive) {
      List<CompletableFuture<Boolean>> w = new ArrayList<>(s.waiting);
      s.waiting.clear();
      w.forEach(f -> f.complete(alive));
    }

    // The store the engine talks to (as CoreLeaseStore).

    @Override
    public CompletableFuture<AcquireResult> acquire(io.leasehold.spi.AcquireRequest request) {
      long deadline = clock.read() + request.timeout().toNanos();
      return session().thenCompose(s -> acquireIn(s, request, deadline, true));
    }

    private CompletableFuture<AcquireResult> acquireIn(
        Session s, io.leasehold.spi.AcquireRequest request, long deadline, boolean mayRegrant) {
      long validFrom = s.confirmedSentAt;
      long left = deadline - clock.read();
      if (left <= 0) {
        return CompletableFuture.failedFuture(new LeaseTimeoutException("not sent: the holder stopped waiting", null));
      }
      s.pins++;
      CompletableFuture<Reply> answer = within(new CompletableFuture<>(), left, "acquire");
      Command acquire =
          Command.newBuilder()
              .setAcquire(
                  AcquireRequest.newBuilder()
                      .setCall(newCall())
                      .setName(request.leaseName())
                      .setHolder(request.holder().toString())
                      .setRequestId(request.requestId())
                      .setSessionId(s.sessionId))
              .build();
      call(acquire, answer::complete);
      return answer.handle((reply, error) -> {
            if (error != null) {
              s.pins--;
              retire(s); // outcome unknown: a key nobody believes in may exist
              return CompletableFuture.<AcquireResult>failedFuture(error);
            }
            if (reply.hasFailure()) {
              s.pins--;
              if (reply.getFailure().getCode() == Failure.Code.SESSION_NOT_FOUND && mayRegrant) {
                s.ended = true;
                return session().thenCompose(again -> acquireIn(again, request, deadline, false));
              }
              retire(s);
              return CompletableFuture.<AcquireResult>failedFuture(
                  new LeaseTimeoutException("refused: " + reply.getFailure().getMessage(), null));
            }
            AcquireResponse response;
            try {
              response = AcquireResponse.parseFrom(reply.getOk());
            } catch (IOException e) {
              throw new UncheckedIOException(e);
            }
            if (!response.getAcquired()) {
              s.pins--;
              return CompletableFuture.<AcquireResult>completedFuture(new AcquireResult.HeldElsewhere(response.getHolder()));
            }
            held.put(response.getToken(), s); // the acquire's pin becomes the tenure's
            return CompletableFuture.<AcquireResult>completedFuture(new AcquireResult.Acquired(response.getToken(), validFrom));
          })
          .thenCompose(f -> f);
    }

    @Override
    public CompletableFuture<RenewResult> renew(Tenure tenure, long sentAtNanos) {
      Session s = held.get(tenure.token());
      if (s == null || s.ended) {
        drop(tenure.token());
        return CompletableFuture.completedFuture(new RenewResult.Lost(new LeaseLost(LeaseLost.Kind.EXPIRED, "session ended")));
      }
      if (s.confirmedSentAt - (sentAtNanos - intervalNanos) >= 0) {
        return CompletableFuture.completedFuture(new RenewResult.Renewed(s.confirmedSentAt));
      }
      CompletableFuture<Boolean> alive = new CompletableFuture<>();
      s.waiting.add(alive);
      return alive.thenApply(yes -> {
        if (!yes) {
          trace("process " + id + " renewal of " + tenure.token() + ": session gone");
          drop(tenure.token());
          return new RenewResult.Lost(new LeaseLost(LeaseLost.Kind.EXPIRED, "session expired"));
        }
        return new RenewResult.Renewed(s.confirmedSentAt);
      });
    }

    @Override
    public CompletableFuture<RenewResult> confirm(Tenure tenure, long sentAtNanos) {
      CompletableFuture<GetResponse> read = within(new CompletableFuture<>(), 500 * MS, "confirm");
      GetRequest get = GetRequest.newBuilder().setKey(LEASE_PREFIX + tenure.leaseName()).build();
      send(() -> atLeader(() -> {
        GetResponse response = state.get(get);
        send(() -> runtime.callbacks().execute(() -> read.complete(response)), false);
      }), true);
      return read.thenCompose(response -> {
        Session s = held.get(tenure.token());
        KeyValue kv = response.getKvsCount() == 1 ? response.getKvs(0) : null;
        boolean ours =
            kv != null && s != null && kv.getCreateRevision() == tenure.token() && kv.getSessionId() == s.sessionId
                && kv.getValue().toStringUtf8().equals(tenure.holder().toString());
        if (!ours) {
          drop(tenure.token());
          return CompletableFuture.completedFuture(
              new RenewResult.Lost(new LeaseLost(LeaseLost.Kind.REVOKED, "the core no longer has the tenure")));
        }
        return renew(tenure, sentAtNanos);
      });
    }

    @Override
    public CompletableFuture<Void> release(Tenure tenure) {
      Session s = held.get(tenure.token());
      drop(tenure.token());
      CompletableFuture<Reply> answer = within(new CompletableFuture<>(), 600 * MS, "release");
      Command release =
          Command.newBuilder()
              .setRelease(
                  ReleaseRequest.newBuilder()
                      .setCall(newCall())
                      .setName(tenure.leaseName())
                      .setHolder(tenure.holder().toString())
                      .setToken(tenure.token()))
              .build();
      call(release, answer::complete);
      return answer.handle((reply, error) -> {
        if (error != null && s != null) {
          retire(s); // the key may outlive the release: let it lapse with its session
        }
        return null;
      });
    }

    private void drop(long token) {
      Session s = held.remove(token);
      if (s != null) {
        s.pins--;
      }
    }
  }
}
