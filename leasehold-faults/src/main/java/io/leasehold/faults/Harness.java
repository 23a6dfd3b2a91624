package io.leasehold.faults;

import io.leasehold.client.CoreBackendProvider;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.KeyValue;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One run of the fault harness: a 3-node core ({@link Cluster}) that holds the fenced registers
 * and the KV writes; the lease store (that core, or a managed etcd or ZooKeeper cluster, or a store
 * given by URI); {@code clients} contending {@link ClientMain} processes that reach every store
 * only through links of their own; a nemesis that injects one fault at a time on a seeded schedule;
 * then healing, final reads and the {@link Checker}.
 */
final class Harness implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(Harness.class);

  /** The lease names the clients contend for: {@code lease-0 ... lease-(n-1)}. */
  static List<String> leaseNames(int n) {
    List<String> names = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      names.add("lease-" + i);
    }
    return names;
  }

  /**
   * What to run.
   *
   * @param duration how long the nemesis works (startup and the final checks come on top); the
   *     first round of every fault type always completes
   * @param seed the nemesis's and the clients' seed
   * @param clients how many contending client processes
   * @param leases how many lease names they contend for (each client contends for all)
   * @param ttl the leases' TTL
   * @param dir where histories, node logs and the report go
   * @param leaseBackend null for the managed core; {@code etcd} or {@code zookeeper} for a managed
   *     cluster of that store; else a backend URI used as given
   * @param maxClockDrift the leases' {@code maxClockDrift}
   * @param clockSkew how far {@link FaultType#CLOCK_SKEW} moves a clock's rate from 1
   * @param faults the fault types to inject
   * @param sessionPerLease whether each lease of a client has a backend (a session) of its own
   * @param classPath the class path of the child JVMs
   */
  record Options(Duration duration, long seed, int clients, int leases, Duration ttl, Path dir, String leaseBackend,
      double maxClockDrift, double clockSkew, Set<FaultType> faults, boolean sessionPerLease, String classPath) {
    Options {
      faults = Set.copyOf(faults);
    }

    /** {@return the backend as the report names it} */
    String backendName() {
      return leaseBackend == null ? "the managed core" : leaseBackend;
    }
  }

  /**
   * The outcome of a run.
   *
   * @param result the checker's verdict
   * @param report the human-readable report
   */
  record Outcome(Checker.Result result, String report) {}

  /** The file in a run's directory that keeps the core's final read, for {@code leasehold faults check}. */
  static final String FINAL_READ = "final-read.txt";

  private final Options options;
  private final Random random;
  private final Clocks clocks;
  private final Cluster core;
  /** The lease store when the harness runs it: {@link #core} itself, etcd or ZooKeeper; null for a URI. */
  private final StoreCluster store;
  private final List<Slot> slots = new ArrayList<>();
  private final List<Path> histories = new ArrayList<>();
  private final PrintWriter nemesis;
  private int faultIds;
  /** Runs as each fault begins; a test makes a step fail with it. */
  Consumer<FaultType> beforeFault = type -> {};

  Harness(Options options) {
    this.options = options;
    this.random = new Random(options.seed());
    try {
      Files.createDirectories(options.dir());
      this.nemesis = new PrintWriter(Files.newBufferedWriter(options.dir().resolve("nemesis.log"), StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write to " + options.dir(), e);
    }
    this.clocks = new Clocks(options.dir().resolve("clock"));
    this.core = new Cluster(options.dir().resolve("core"), options.classPath(), clocks);
    String b = options.leaseBackend();
    if (b == null) {
      store = core;
    } else if (b.equals("etcd")) {
      store = new EtcdCluster(options.dir().resolve("etcd"));
    } else if (b.equals("zookeeper")) {
      store = new ZooKeeperCluster(options.dir().resolve("zookeeper"), options.classPath(), clocks);
    } else {
      store = null;
    }
  }

  /** {@return the fault types this run can inject, in a fixed order} */
  List<FaultType> applicable() {
    List<FaultType> types = new ArrayList<>();
    for (FaultType t : FaultType.values()) {
      if (!options.faults().contains(t)) {
        continue;
      }
      if (t == FaultType.OPERATOR_DELETE && store == null) {
        continue; // a store given by URI: the harness does not know how to reach its records
      }
      if (t == FaultType.LATE_COPY && store != core) {
        continue; // only the core's clients go through call relays (RunOptions refuses it when asked for)
      }
      types.add(t);
    }
    return types;
  }

  /** Runs the whole thing and checks it. */
  Outcome run() {
    List<FaultType> types = applicable();
    log.info("faults: seed {}, {} clients, {} leases, ttl {} ms, backend {}, faults {}, nemesis for {} s, histories in {}",
        options.seed(), options.clients(), options.leases(), options.ttl().toMillis(), options.backendName(), types,
        options.duration().toSeconds(), options.dir().toAbsolutePath());
    core.start();
    if (store != null && store != core) {
      store.start();
    }
    waitFor("a leader", Duration.ofSeconds(180), this::leaders);
    for (int c = 0; c < options.clients(); c++) {
      slots.add(new Slot(c));
    }
    slots.forEach(Slot::launch);
    waitFor("a first tenure", Duration.ofSeconds(180), () -> slots.stream().anyMatch(s -> !s.current.holding.isEmpty()));
    long end = System.nanoTime() + options.duration().toNanos();
    List<FaultType> round = new ArrayList<>();
    boolean firstRoundDone = types.isEmpty();
    String stoppedEarly = null;
    try {
      while (System.nanoTime() - end < 0 || !firstRoundDone) {
        pause(1000 + random.nextInt(2000)); // quiet between faults: normal handovers
        if (types.isEmpty()) {
          continue;
        }
        if (round.isEmpty()) {
          round.addAll(types);
          Collections.shuffle(round, random);
        }
        inject(round.remove(0));
        if (round.isEmpty()) {
          firstRoundDone = true;
        }
        waitFor("a leader after healing", Duration.ofSeconds(180), this::leaders);
      }
    } catch (RuntimeException e) {
      // A step that cannot finish (an admin command refused for minutes, a member that never
      // answers again) ends the nemesis, not the run: what the clients recorded until then is
      // still checked, and the report says the run stopped early (an error, so it fails).
      log.error("faults: the nemesis stopped early after fault {}; healing and checking what was recorded", faultIds, e);
      stoppedEarly = "the nemesis stopped early, at fault " + faultIds + ": " + e.getMessage()
          + "; the histories until then were checked";
    }
    return finish(stoppedEarly);
  }

  private boolean leaders() {
    return core.leader().isPresent() && (store == null || store == core || store.leader().isPresent());
  }

  private long ttlTimes(double min, double max) {
    return (long) (options.ttl().toMillis() * (min + (max - min) * random.nextDouble()));
  }

  private void inject(FaultType type) {
    int id = ++faultIds;
    // Each fault sets both as it strikes; these stand for a fault that failed before it did.
    long start = System.nanoTime();
    String target = "-";
    long healed = 0;
    Map<String, String> detail = new LinkedHashMap<>();
    try {
      beforeFault.accept(type);
      switch (type) {
        case KILL_NODE -> {
          StoreCluster cl = anyCluster();
          int j = node(cl);
          target = cl.name(j);
          start = System.nanoTime();
          cl.kill(j);
          pause(ttlTimes(0.5, 2));
          cl.restart(j);
          healed = System.nanoTime();
          awaitMember(cl, j);
        }
        case PAUSE_NODE -> {
          StoreCluster cl = anyCluster();
          int j = node(cl);
          target = cl.name(j);
          start = System.nanoTime();
          Children.signal(cl.process(j), "STOP");
          pause(ttlTimes(1.5, 2.5));
          Children.signal(cl.process(j), "CONT");
          healed = System.nanoTime();
          awaitMember(cl, j);
        }
        case PAUSE_LEADER_LONG -> {
          // The lease store's leader, frozen well past every session's TTL while clients hold leases:
          // when it wakes up, its idea of every deadline is stale (and someone else leads).
          StoreCluster cl = store != null ? store : core;
          int j = cl.leader().orElseGet(() -> random.nextInt(cl.size()));
          target = cl.name(j);
          detail.put("held", Integer.toString(heldCount()));
          start = System.nanoTime();
          Children.signal(cl.process(j), "STOP");
          pause(ttlTimes(2, 3));
          Children.signal(cl.process(j), "CONT");
          healed = System.nanoTime();
          awaitMember(cl, j);
        }
        case PARTITION_NODE -> {
          StoreCluster cl = isolatableCluster();
          int j = node(cl);
          target = cl.name(j);
          start = System.nanoTime();
          cl.cutPeers(j);
          slots.forEach(s -> s.linkTo(cl, j).cut());
          pause(ttlTimes(1.5, 2.5));
          cl.healPeers(j);
          slots.forEach(s -> s.linkTo(cl, j).heal());
          healed = System.nanoTime();
          awaitMember(cl, j);
        }
        case ISOLATE_NODE -> {
          // Cut off from its peers only: clients connected to it keep talking to a node that is no
          // longer part of the group (or that still thinks it leads).
          StoreCluster cl = isolatableCluster();
          int j = node(cl);
          target = cl.name(j);
          start = System.nanoTime();
          cl.cutPeers(j);
          pause(ttlTimes(1.5, 2.5));
          cl.healPeers(j);
          healed = System.nanoTime();
          awaitMember(cl, j);
        }
        case PAUSE_HOLDER -> {
          Slot s = holderOrAny();
          target = s.current.id;
          start = System.nanoTime();
          Children.signal(s.current.process, "STOP");
          pause(ttlTimes(1.5, 2.5));
          Children.signal(s.current.process, "CONT");
        }
        case PARTITION_CLIENT -> {
          Slot s = holderOrAny();
          target = s.current.id;
          start = System.nanoTime();
          s.links().forEach(ProxyLink::cut);
          pause(ttlTimes(1.5, 2.5));
          s.links().forEach(ProxyLink::heal);
        }
        case KILL_CLIENT -> {
          Slot s = holderOrAny();
          target = s.current.id;
          detail.put("held", String.join(",", s.current.holding).replace(' ', '_'));
          start = System.nanoTime();
          s.kill();
          pause(ttlTimes(0.5, 1));
          s.launch();
          detail.put("restarted", s.current.id);
        }
        case LATE_COPY -> {
          // The network keeps a copy of each write of the client and delivers it once more, to
          // the same node or another, up to 2 T later; the client never sees the copy's answer.
          Slot s = holderOrAny();
          target = s.current.id;
          detail.put("held", String.join(",", s.current.holding).replace(' ', '_'));
          start = System.nanoTime();
          s.copies.on();
          pause(ttlTimes(2, 3));
          s.copies.off();
          healed = System.nanoTime();
          // The copies made until now still go out, each within 2 T: the fault's record says
          // what became of them, so the next fault waits for them.
          boolean sent = s.copies.awaitSent(s.copies.maxDelay().plus(s.copies.copyDeadline()).plusSeconds(5));
          detail.putAll(s.copies.tally().detail());
          if (!sent) {
            detail.put("unsent", Integer.toString(s.copies.pending()));
          }
        }
        case OPERATOR_DELETE -> {
          // A delete that finds nothing (the lease changed hands, or its holder released it, between
          // the pick and the delete) tests nothing: pick again, a few times.
          Slot s;
          String lease;
          boolean silent;
          boolean deleted;
          int attempts = 0;
          do {
            attempts++;
            waitFor("a holder to revoke", Duration.ofSeconds(30), () -> slots.stream().anyMatch(h -> !h.current.holding.isEmpty()));
            List<Slot> holders = slots.stream().filter(h -> !h.current.holding.isEmpty()).toList();
            s = holders.get(random.nextInt(holders.size()));
            List<String> held = new ArrayList<>(s.current.holding);
            lease = held.isEmpty() ? leaseNames(options.leases()).get(0) : held.get(random.nextInt(held.size()));
            // Half the time the holder is cut off first: its watch is silent, so only the store can
            // keep the name from a second holder until the old one has stopped.
            silent = random.nextBoolean();
            target = lease;
            detail.put("holder", s.current.id);
            detail.put("silent", silent ? "yes" : "no");
            start = System.nanoTime();
            if (silent) {
              s.links().forEach(ProxyLink::cut);
            }
            try {
              deleted = store.deleteLease(lease);
            } catch (RuntimeException e) {
              log.warn("operator delete of {} failed: {}", lease, e.toString());
              deleted = false;
              detail.put("error", e.getClass().getSimpleName());
            }
            if (!deleted && attempts < 5) {
              if (silent) {
                s.links().forEach(ProxyLink::heal);
              }
              pause(200);
            }
          } while (!deleted && attempts < 5);
          if (attempts > 1) {
            detail.put("attempts", Integer.toString(attempts));
          }
          detail.put("deleted", deleted ? "yes" : "no");
          pause(ttlTimes(0.5, 1));
          if (silent) {
            s.links().forEach(ProxyLink::heal);
          }
        }
        case CLOCK_SKEW -> {
          // The dangerous directions, three times in four: a client's clock slow (its deadline comes
          // late), a node's fast (it expires sessions early). Within --clock-skew of 1.
          boolean dangerous = random.nextInt(4) != 0;
          boolean client = random.nextBoolean() || !skewableNodes();
          String name;
          double rate;
          if (client) {
            name = holderOrAny().current.id;
            rate = dangerous ? 1 - options.clockSkew() : 1 + options.clockSkew();
          } else {
            StoreCluster cl = store != null && store.skewable() ? store : core;
            int j = node(cl);
            name = cl.name(j);
            rate = dangerous ? 1 + options.clockSkew() : 1 - options.clockSkew();
          }
          target = name;
          detail.put("rate", String.format(Locale.ROOT, "%.6f", rate));
          start = System.nanoTime();
          boolean applied = clocks.set(name, rate);
          detail.put("applied", applied ? "yes" : "no");
          pause(ttlTimes(3, 5));
          clocks.set(name, 1.0);
        }
        case MEMBERSHIP_CHANGE -> {
          // Always the core's nodes: the managed etcd and ZooKeeper clusters have fixed members.
          int j = random.nextInt(core.size());
          boolean killLeader = random.nextBoolean();
          target = core.name(j);
          start = System.nanoTime();
          detail.putAll(core.replaceWiped(j, killLeader, ttlTimes(0.5, 1)));
          healed = System.nanoTime();
          awaitMember(core, j);
        }
        default -> throw new IllegalStateException("unknown fault " + type);
      }
    } catch (RuntimeException e) {
      // Recorded with what is known of it: the checker excuses a store's early end by an operator
      // delete's record and bounds clock skews by theirs, so a fault left out could fake or hide
      // a violation. Whatever it left behind (a paused or cut-off member) the end heals.
      detail.put("aborted", e.getClass().getSimpleName());
      record(id, type, target, start, System.nanoTime(), detail);
      throw e;
    }
    record(id, type, target, start, healed == 0 ? System.nanoTime() : healed, detail);
  }

  private void record(int id, FaultType type, String target, long start, long healed, Map<String, String> detail) {
    StringBuilder extra = new StringBuilder();
    detail.forEach((k, v) -> extra.append(' ').append(k).append('=').append(v.isEmpty() ? "-" : v));
    log.info("fault {}: {} of {} for {} ms{}", id, type, target, (healed - start) / 1_000_000, extra);
    nemesis.println("FAULT " + id + " " + type + " " + target + " " + start + " " + healed + extra);
    nemesis.flush();
  }

  /** A member hit by a fault serves again before the next fault: never two members down at once. */
  private static void awaitMember(StoreCluster cl, int j) {
    waitFor(cl.name(j) + " to answer again", Duration.ofSeconds(180), () -> cl.answers(j));
  }

  private int heldCount() {
    return slots.stream().mapToInt(s -> s.current.holding.size()).sum();
  }

  /** The lease store's members half the time when the harness runs a separate one, else the core's. */
  private StoreCluster anyCluster() {
    return store != null && store != core && random.nextBoolean() ? store : core;
  }

  private StoreCluster isolatableCluster() {
    return store != null && store != core && store.canIsolate() && random.nextBoolean() ? store : core;
  }

  private boolean skewableNodes() {
    return core.skewable() || (store != null && store.skewable());
  }

  /** The leader about half the time (when one is known), else any member. */
  private int node(StoreCluster cl) {
    if (random.nextBoolean()) {
      Optional<Integer> leader = cl.leader();
      if (leader.isPresent()) {
        return leader.get();
      }
    }
    return random.nextInt(cl.size());
  }

  private Slot holderOrAny() {
    List<Slot> holding = slots.stream().filter(s -> !s.current.holding.isEmpty()).toList();
    return holding.isEmpty() ? slots.get(random.nextInt(slots.size())) : holding.get(random.nextInt(holding.size()));
  }

  private Outcome finish(String stoppedEarly) {
    log.info("faults: healing everything and stopping the clients");
    core.healAll();
    List<StoreCluster> clusters = store != null && store != core ? List.of(core, store) : List.of(core);
    for (StoreCluster cl : clusters) {
      cl.healAll();
      for (int j = 0; j < cl.size(); j++) {
        Children.signal(cl.process(j), "CONT");
        cl.restart(j);
      }
    }
    for (Slot s : slots) {
      if (s.copies != null) {
        s.copies.off();
      }
      s.links().forEach(ProxyLink::healAll);
      Children.signal(s.current.process, "CONT");
    }
    List<String> stopErrors = new ArrayList<>();
    if (stoppedEarly != null) {
      stopErrors.add(stoppedEarly);
    }
    try {
      waitFor("a leader at the end", Duration.ofSeconds(180), this::leaders);
    } catch (IllegalStateException e) {
      stopErrors.add(e.getMessage() + "; the clients were stopped and their histories checked anyway");
    }
    for (Slot s : slots) {
      s.current.stdin.println("stop");
      s.current.stdin.flush();
    }
    for (Slot s : slots) {
      try {
        if (!s.current.process.waitFor(30, TimeUnit.SECONDS)) {
          stopErrors.add(s.current.id + " did not stop within 30 s; killed");
          Children.kill(s.current.process);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while stopping the clients", e);
      }
    }
    Checker.FinalState end;
    try {
      GetResponse kvs = core.read(ClientMain.KV_PREFIX, true);
      Set<String> keys = new HashSet<>();
      kvs.getKvsList().forEach(kv -> keys.add(kv.getKey()));
      Map<String, Checker.Register> registers = new HashMap<>();
      for (KeyValue kv : core.read(ClientMain.REGISTER_PREFIX, true).getKvsList()) {
        registers.put(kv.getKey().substring(ClientMain.REGISTER_PREFIX.length()),
            new Checker.Register(kv.getModRevision(), Long.parseLong(kv.getValue().toStringUtf8().split(" ")[0])));
      }
      end = new Checker.FinalState(keys, registers);
      try {
        end.write(options.dir().resolve(FINAL_READ));
      } catch (IOException e) {
        log.warn("cannot keep the final read in {} (`leasehold faults check` will not check acknowledged writes): {}",
            options.dir().resolve(FINAL_READ), e.toString());
      }
    } catch (RuntimeException e) {
      log.error("final reads failed", e);
      end = null;
    }
    History.Recorded recorded = History.read(histories, options.dir().resolve("nemesis.log"));
    List<String> errors = new ArrayList<>(recorded.errors());
    errors.addAll(stopErrors);
    recorded = new History.Recorded(recorded.tenures(), recorded.writes(), recorded.kvs(), recorded.faults(),
        recorded.losses(), errors);
    Checker.Result result = Checker.check(recorded, end, new Checker.Bounds(options.maxClockDrift()));
    String text = Report.text(options, result);
    try {
      Files.writeString(options.dir().resolve("report.txt"), text, StandardCharsets.UTF_8);
      Files.writeString(options.dir().resolve("report.json"), Report.json(options, result), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the report", e);
    }
    return new Outcome(result, text);
  }

  private static final Pattern HOST_LIST = Pattern.compile("^([a-zA-Z][a-zA-Z0-9+.-]*://)([^/?#]+)(.*)$");

  /**
   * Rewrites {@code scheme://host:port,host:port/rest} so that each endpoint goes through a link
   * of this client (which the client partitions then cut as well); URIs without such a list are
   * used as they are.
   */
  static String proxied(String id, String uri, List<ProxyLink> links) {
    Matcher m = HOST_LIST.matcher(uri);
    if (!m.matches()) {
      return uri;
    }
    StringBuilder out = new StringBuilder(m.group(1));
    String[] parts = m.group(2).split(",");
    for (int i = 0; i < parts.length; i++) {
      List<InetSocketAddress> ep = CoreBackendProvider.endpoints("leasehold://" + parts[i]);
      InetSocketAddress target = new InetSocketAddress(ep.get(0).getHostString(), ep.get(0).getPort());
      ProxyLink l = ProxyLink.open(id + "->" + parts[i], new InetSocketAddress("127.0.0.1", 0), target);
      links.add(l);
      out.append(i == 0 ? "" : ",").append("127.0.0.1:").append(l.port());
    }
    return out.append(m.group(3)).toString();
  }

  @Override
  public void close() {
    for (Slot s : slots) {
      if (s.current != null) {
        Children.signal(s.current.process, "CONT");
        Children.kill(s.current.process);
      }
      s.relays.forEach(CallRelay::close);
      if (s.copies != null) {
        s.copies.close();
      }
      s.links().forEach(ProxyLink::close);
    }
    if (store != null && store != core) {
      store.close();
    }
    core.close();
    nemesis.close();
  }

  private static void waitFor(String what, Duration timeout, BooleanSupplier condition) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException("gave up waiting for " + what + " after " + timeout.toSeconds() + " s");
      }
      pause(100);
    }
  }

  private static void pause(long millis) {
    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(millis));
  }

  /**
   * One client's place in the run: its links (to every core node, and to every member of a
   * separate lease store) and its current process. When the run injects {@link
   * FaultType#LATE_COPY}, the client reaches each core link through a {@link CallRelay}, and
   * its writes' late copies go through its links again. A killed client is started again in the same
   * slot, with the same links, as a new process with a new name ({@code c1}, {@code c1.2}, ...) and
   * a history file of its own.
   */
  private final class Slot {
    final int index;
    final List<ProxyLink> coreLinks = new ArrayList<>();
    final List<ProxyLink> storeLinks = new ArrayList<>();
    /** In front of {@link #coreLinks}, one each, when the run injects late copies; else empty. */
    final List<CallRelay> relays = new ArrayList<>();
    /** The late copies of this client's writes; null when the run injects none. */
    final LateCopies copies;
    /** The ports the client is given for the core's nodes: its relays', else its links'. */
    final List<Integer> corePorts = new ArrayList<>();
    final String leaseUri;
    int incarnations;
    volatile ClientProcess current;

    Slot(int index) {
      this.index = index;
      String name = "c" + (index + 1);
      Map<String, InetSocketAddress> linkAddresses = new LinkedHashMap<>();
      for (int j = 0; j < Cluster.SIZE; j++) {
        ProxyLink l = ProxyLink.open(name + "->" + Cluster.id(j), new InetSocketAddress("127.0.0.1", 0), core.clientAddress(j));
        coreLinks.add(l);
        linkAddresses.put(Cluster.id(j), new InetSocketAddress("127.0.0.1", l.port()));
      }
      if (options.faults().contains(FaultType.LATE_COPY) && store == core) {
        copies = new LateCopies(name, linkAddresses, options.ttl(), options.seed() * 1000 + index);
        linkAddresses.forEach((node, link) -> {
          CallRelay r = CallRelay.open(name + "->" + node, link, copies);
          relays.add(r);
          corePorts.add(r.port());
        });
      } else {
        copies = null;
        coreLinks.forEach(l -> corePorts.add(l.port()));
      }
      if (store == core) {
        leaseUri = core.leaseUri(corePorts, options.ttl().toMillis());
      } else if (store != null) {
        List<Integer> ports = new ArrayList<>();
        for (int j = 0; j < store.size(); j++) {
          ProxyLink l = ProxyLink.open(name + "->" + store.name(j), new InetSocketAddress("127.0.0.1", 0), store.clientAddress(j));
          storeLinks.add(l);
          ports.add(l.port());
        }
        leaseUri = store.leaseUri(ports, options.ttl().toMillis());
      } else {
        leaseUri = proxied(name, options.leaseBackend(), storeLinks);
      }
    }

    List<ProxyLink> links() {
      List<ProxyLink> all = new ArrayList<>(coreLinks);
      all.addAll(storeLinks);
      return all;
    }

    /** This client's link to member {@code j} of {@code cl}. */
    ProxyLink linkTo(StoreCluster cl, int j) {
      return cl == core ? coreLinks.get(j) : storeLinks.get(j);
    }

    void launch() {
      incarnations++;
      String id = "c" + (index + 1) + (incarnations == 1 ? "" : "." + incarnations);
      StringBuilder coreEndpoints = new StringBuilder();
      for (int j = 0; j < corePorts.size(); j++) {
        coreEndpoints.append(j == 0 ? "" : ",").append("127.0.0.1:").append(corePorts.get(j));
      }
      Path history = options.dir().resolve("client-" + id + ".log");
      histories.add(history);
      List<String> cmd = new ArrayList<>(List.of(
          Children.java(), "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true"));
      cmd.addAll(clocks.jvmOptions(id, Clocks.LEASEHOLD));
      cmd.addAll(List.of("-cp", options.classPath(), ClientMain.class.getName(),
          id, leaseUri, coreEndpoints.toString(), String.join(",", leaseNames(options.leases())),
          Long.toString(options.ttl().toMillis()), Long.toString(options.seed() * 1000 + index * 10L + incarnations),
          history.toAbsolutePath().toString(), Double.toString(options.maxClockDrift()),
          options.sessionPerLease() ? "session-per-lease" : "shared-session"));
      Process p = Children.startPiped(cmd, options.dir().resolve("client-" + id + ".err"));
      ClientProcess c = new ClientProcess(id, p, history);
      current = c;
      Thread reader = new Thread(c::readState, "state-" + id);
      reader.setDaemon(true);
      reader.start();
    }

    /**
     * kill -9, then the harness notes the kill in the dead client's history: its open tenures end
     * at their last ALIVE. A line the client was writing when it died (no newline yet) is dropped:
     * it had not acted on it, since it acts only after a line is flushed.
     */
    void kill() {
      ClientProcess c = current;
      Children.signal(c.process, "CONT");
      Children.kill(c.process);
      c.holding.clear();
      long killedAt = System.nanoTime();
      try (RandomAccessFile f = new RandomAccessFile(c.history.toFile(), "rw")) {
        long len = f.length();
        long keep = len;
        while (keep > 0) {
          f.seek(keep - 1);
          if (f.read() == '\n') {
            break;
          }
          keep--;
        }
        f.setLength(keep);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot tidy the history of killed " + c.id, e);
      }
      try {
        Files.writeString(c.history, "KILLED " + c.id + " " + killedAt + "\n", StandardCharsets.UTF_8,
            StandardOpenOption.APPEND);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot note the kill of " + c.id, e);
      }
    }
  }

  /** A client process. */
  private static final class ClientProcess {
    final String id;
    final Process process;
    final Path history;
    final PrintWriter stdin;
    final Set<String> holding = ConcurrentHashMap.newKeySet();

    ClientProcess(String id, Process process, Path history) {
      this.id = id;
      this.process = process;
      this.history = history;
      this.stdin = new PrintWriter(process.outputWriter(StandardCharsets.UTF_8));
    }

    void readState() {
      try (BufferedReader out = process.inputReader(StandardCharsets.UTF_8)) {
        for (String line = out.readLine(); line != null; line = out.readLine()) {
          String[] f = line.split(" ");
          if (f.length == 3 && f[0].equals("STATE")) {
            if (f[2].equals("held")) {
              holding.add(f[1]);
            } else {
              holding.remove(f[1]);
            }
          }
        }
      } catch (IOException ignored) {
        // the process is gone
      }
      holding.clear();
    }
  }
}
