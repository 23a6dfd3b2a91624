package io.leasehold.faults;

import io.leasehold.client.CoreBackendProvider;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.KeyValue;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One run of the fault harness: a 3-node core ({@link Cluster}), {@code clients} contending
 * {@link ClientMain} processes that reach the core only through links of their own, a nemesis that
 * injects one fault at a time on a seeded schedule, then healing, final reads and the {@link
 * Checker}.
 */
final class Harness implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(Harness.class);
  static final String LEASE = "faults-lease";

  /**
   * What to run.
   *
   * @param duration how long the nemesis works (startup and the final checks come on top)
   * @param seed the nemesis's and the clients' seed
   * @param clients how many contending client processes
   * @param ttl the lease's TTL
   * @param dir where histories, node logs and the report go
   * @param leaseBackend the clients' lease backend URI, or null for the managed core
   * @param classPath the class path of the child JVMs
   */
  record Options(Duration duration, long seed, int clients, Duration ttl, Path dir, String leaseBackend, String classPath) {}

  /**
   * The outcome of a run.
   *
   * @param result the checker's verdict
   * @param report the human-readable report
   */
  record Outcome(Checker.Result result, String report) {}

  private final Options options;
  private final Random random;
  private final Cluster cluster;
  private final List<Client> clients = new ArrayList<>();
  private final PrintWriter nemesis;
  private int faultIds;

  Harness(Options options) {
    this.options = options;
    this.random = new Random(options.seed());
    this.cluster = new Cluster(options.dir().resolve("core"), options.classPath());
    try {
      Files.createDirectories(options.dir());
      this.nemesis = new PrintWriter(Files.newBufferedWriter(options.dir().resolve("nemesis.log"), StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write to " + options.dir(), e);
    }
  }

  /** Runs the whole thing and checks it. */
  Outcome run() {
    log.info("faults: seed {}, {} clients, ttl {} ms, nemesis for {} s, histories in {}", options.seed(), options.clients(),
        options.ttl().toMillis(), options.duration().toSeconds(), options.dir().toAbsolutePath());
    cluster.start();
    waitFor("a leader", Duration.ofSeconds(180), () -> cluster.leader().isPresent());
    for (int c = 0; c < options.clients(); c++) {
      clients.add(startClient(c));
    }
    waitFor("a first tenure", Duration.ofSeconds(180), () -> clients.stream().anyMatch(cl -> cl.holding));
    long end = System.nanoTime() + options.duration().toNanos();
    List<FaultType> round = new ArrayList<>();
    while (System.nanoTime() - end < 0) {
      pause(1000 + random.nextInt(2000)); // quiet between faults: normal handovers
      if (System.nanoTime() - end >= 0) {
        break;
      }
      if (round.isEmpty()) {
        round.addAll(Arrays.asList(FaultType.values()));
        Collections.shuffle(round, random);
      }
      inject(round.remove(0));
      waitFor("a leader after healing", Duration.ofSeconds(180), () -> cluster.leader().isPresent());
    }
    return finish();
  }

  private void inject(FaultType type) {
    long length = (long) (options.ttl().toMillis() * (1.5 + random.nextDouble()));
    int id = ++faultIds;
    long start;
    String target;
    switch (type) {
      case KILL_NODE -> {
        int j = node();
        target = Cluster.id(j);
        start = System.nanoTime();
        cluster.kill(j);
        pause((long) (options.ttl().toMillis() * (0.5 + 1.5 * random.nextDouble())));
        cluster.restart(j);
        waitFor(target + " to answer again", Duration.ofSeconds(180), () -> cluster.answers(j));
      }
      case PAUSE_NODE -> {
        int j = node();
        target = Cluster.id(j);
        start = System.nanoTime();
        Children.signal(cluster.process(j), "STOP");
        pause(length);
        Children.signal(cluster.process(j), "CONT");
      }
      case PAUSE_HOLDER -> {
        Client c = holderOrAny();
        target = c.id;
        start = System.nanoTime();
        Children.signal(c.process, "STOP");
        pause(length);
        Children.signal(c.process, "CONT");
      }
      case PARTITION_NODE -> {
        int j = node();
        target = Cluster.id(j);
        start = System.nanoTime();
        cluster.cutRaft(j);
        clients.forEach(c -> c.links.get(j).cut());
        pause(length);
        cluster.healRaft(j);
        clients.forEach(c -> c.links.get(j).heal());
      }
      case PARTITION_CLIENT -> {
        Client c = holderOrAny();
        target = c.id;
        start = System.nanoTime();
        c.links.forEach(Link::cut);
        pause(length);
        c.links.forEach(Link::heal);
      }
      default -> throw new IllegalStateException("unknown fault " + type);
    }
    long healed = System.nanoTime();
    log.info("fault {}: {} of {} for {} ms", id, type, target, (healed - start) / 1_000_000);
    nemesis.println("FAULT " + id + " " + type + " " + target + " " + start + " " + healed);
    nemesis.flush();
  }

  /** The leader about half the time (when one is known), else any node. */
  private int node() {
    if (random.nextBoolean()) {
      Optional<Integer> leader = cluster.leader();
      if (leader.isPresent()) {
        return leader.get();
      }
    }
    return random.nextInt(Cluster.SIZE);
  }

  private Client holderOrAny() {
    List<Client> holding = clients.stream().filter(c -> c.holding).toList();
    return holding.isEmpty() ? clients.get(random.nextInt(clients.size())) : holding.get(0);
  }

  private Outcome finish() {
    log.info("faults: healing everything and stopping the clients");
    cluster.healAll();
    for (int j = 0; j < Cluster.SIZE; j++) {
      Children.signal(cluster.process(j), "CONT");
      cluster.restart(j);
    }
    for (Client c : clients) {
      c.links.forEach(Link::healAll);
      Children.signal(c.process, "CONT");
    }
    waitFor("a leader at the end", Duration.ofSeconds(180), () -> cluster.leader().isPresent());
    List<String> stopErrors = new ArrayList<>();
    for (Client c : clients) {
      c.stdin.println("stop");
      c.stdin.flush();
    }
    for (Client c : clients) {
      try {
        if (!c.process.waitFor(30, TimeUnit.SECONDS)) {
          stopErrors.add(c.id + " did not stop within 30 s; killed");
          Children.kill(c.process);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while stopping the clients", e);
      }
    }
    Checker.FinalState end;
    try {
      GetResponse kvs = cluster.read(ClientMain.KV_PREFIX, true);
      Set<String> keys = new HashSet<>();
      kvs.getKvsList().forEach(kv -> keys.add(kv.getKey()));
      GetResponse reg = cluster.read(ClientMain.REGISTER, false);
      long revision = 0;
      long token = -1;
      if (reg.getKvsCount() > 0) {
        KeyValue kv = reg.getKvs(0);
        revision = kv.getModRevision();
        token = Long.parseLong(kv.getValue().toStringUtf8().split(" ")[0]);
      }
      end = new Checker.FinalState(keys, revision, token);
    } catch (RuntimeException e) {
      log.error("final reads failed", e);
      end = null;
    }
    List<Path> files = clients.stream().map(c -> c.history).toList();
    History.Recorded recorded = History.read(files, options.dir().resolve("nemesis.log"));
    List<String> errors = new ArrayList<>(recorded.errors());
    errors.addAll(stopErrors);
    recorded = new History.Recorded(recorded.tenures(), recorded.writes(), recorded.kvs(), recorded.faults(), errors);
    Checker.Result result = Checker.check(recorded, end);
    String text = Report.text(options, result);
    try {
      Files.writeString(options.dir().resolve("report.txt"), text, StandardCharsets.UTF_8);
      Files.writeString(options.dir().resolve("report.json"), Report.json(options, result), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the report", e);
    }
    return new Outcome(result, text);
  }

  private Client startClient(int c) {
    String id = "c" + (c + 1);
    List<Link> links = new ArrayList<>();
    StringBuilder core = new StringBuilder();
    for (int j = 0; j < Cluster.SIZE; j++) {
      Link l = Link.open(id + "->" + Cluster.id(j), new InetSocketAddress("127.0.0.1", 0), cluster.clientAddress(j));
      links.add(l);
      core.append(j == 0 ? "" : ",").append("127.0.0.1:").append(l.port());
    }
    String leaseUri = options.leaseBackend() == null ? "leasehold://" + core : proxied(id, options.leaseBackend(), links);
    Path history = options.dir().resolve("client-" + id + ".log");
    List<String> cmd = List.of(
        Children.java(), "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true",
        "-cp", options.classPath(), ClientMain.class.getName(),
        id, leaseUri, core.toString(), LEASE, Long.toString(options.ttl().toMillis()),
        Long.toString(options.seed() + c + 1), history.toAbsolutePath().toString());
    Process p = Children.startPiped(cmd, options.dir().resolve("client-" + id + ".err"));
    Client client = new Client(id, p, links, history);
    Thread reader = new Thread(() -> client.readState(), "state-" + id);
    reader.setDaemon(true);
    reader.start();
    return client;
  }

  private static final Pattern HOST_LIST = Pattern.compile("^([a-zA-Z][a-zA-Z0-9+.-]*://)([^/?#]+)(.*)$");

  /**
   * Rewrites {@code scheme://host:port,host:port/rest} so that each endpoint goes through a link
   * of this client (which the client partitions then cut as well); URIs without such a list are
   * used as they are.
   */
  static String proxied(String id, String uri, List<Link> links) {
    Matcher m = HOST_LIST.matcher(uri);
    if (!m.matches()) {
      return uri;
    }
    StringBuilder out = new StringBuilder(m.group(1));
    String[] parts = m.group(2).split(",");
    for (int i = 0; i < parts.length; i++) {
      List<InetSocketAddress> ep = CoreBackendProvider.endpoints("leasehold://" + parts[i]);
      InetSocketAddress target = new InetSocketAddress(ep.get(0).getHostString(), ep.get(0).getPort());
      Link l = Link.open(id + "->" + parts[i], new InetSocketAddress("127.0.0.1", 0), target);
      links.add(l);
      out.append(i == 0 ? "" : ",").append("127.0.0.1:").append(l.port());
    }
    return out.append(m.group(3)).toString();
  }

  @Override
  public void close() {
    for (Client c : clients) {
      Children.signal(c.process, "CONT");
      Children.kill(c.process);
      c.links.forEach(Link::close);
    }
    cluster.close();
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

  /** A client process and its links. */
  private static final class Client {
    final String id;
    final Process process;
    final List<Link> links;
    final Path history;
    final PrintWriter stdin;
    volatile boolean holding;

    Client(String id, Process process, List<Link> links, Path history) {
      this.id = id;
      this.process = process;
      this.links = links;
      this.history = history;
      this.stdin = new PrintWriter(process.outputWriter(StandardCharsets.UTF_8));
    }

    void readState() {
      try (BufferedReader out = process.inputReader(StandardCharsets.UTF_8)) {
        for (String line = out.readLine(); line != null; line = out.readLine()) {
          if (line.startsWith("STATE ")) {
            holding = line.equals("STATE held");
          }
        }
      } catch (IOException ignored) {
        // the process is gone
      }
      holding = false;
    }
  }
}
