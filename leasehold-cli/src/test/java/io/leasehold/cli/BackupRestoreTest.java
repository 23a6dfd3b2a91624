package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.server.Backup;
import io.leasehold.server.LocalCluster;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code leasehold admin snapshot save} and {@code leasehold server --bootstrap --restore} (issue
 * 16, item 4): a backup of a running cluster seeds a new one whose fencing tokens continue above
 * every token the old one issued, before the backup and after it; its sessions get a full TTL
 * from the new cluster's leader and then expire like any other; a damaged file, a backup this
 * version cannot read, one without --bootstrap, or one onto a directory with data is refused
 * before anything starts.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
@Tag("integration")
class BackupRestoreTest {

  private static final Duration PATIENCE = Duration.ofSeconds(30);
  private static final long BUMP = 1_000_000;
  private static final Duration TTL = Duration.ofSeconds(20);
  /** A lease whose holder is gone after the backup: its restored session must expire. */
  private static final Duration SHORT_TTL = Duration.ofSeconds(3);

  @Test
  void aBackupSeedsANewClusterWhoseTokensContinueAboveTheOldOnes() throws Exception {
    Path dir = DevCommandTest.freshDir("backup");
    Path file = dir.resolve("core.backup");
    long heldToken;
    long afterBackupToken;
    try (LocalCluster old = LocalCluster.start(3, 0, dir.resolve("old"), c -> c.withElectionTimeout(Duration.ofMillis(300)));
        LeaseBackend backend = LeaseBackend.open(old.uri())) {
      old.awaitLeader(PATIENCE);
      Lease held = backend.newLease(settings("kept-through-restore", "holder"));
      await("the holder acquires").atMost(PATIENCE).ignoreExceptions().until(() -> held.acquire().get(20, TimeUnit.SECONDS));
      heldToken = held.fencingToken().orElseThrow();
      Lease shortLived = backend.newLease(LeaseSettings.builder("short-lived", "holder").ttl(SHORT_TTL).build());
      await("the short-lived lease is acquired").atMost(PATIENCE).ignoreExceptions().until(() -> shortLived.acquire().get(20, TimeUnit.SECONDS));

      Cli save = Cli.run("admin", "snapshot", "save", file.toString(), "--backend", old.uri());

      assertThat(save.exitCode()).as(save.out() + save.err()).isZero();
      assertThat(save.out()).containsPattern("^saved revision \\d+ \\(\\d+ bytes, sha256 [0-9a-f]{64}\\) to " + Pattern.quote(file.toString()));
      Matcher revision = Pattern.compile("^saved revision (\\d+)").matcher(save.out());
      assertThat(revision.find()).isTrue();
      assertThat(Long.parseLong(revision.group(1))).as("the backup's revision").isGreaterThanOrEqualTo(heldToken);
      assertThat(Files.list(dir).map(p -> p.getFileName().toString())).as("no partial file left").containsExactlyInAnyOrder("old", "core.backup");

      // The old cluster goes on issuing tokens after the backup: none of them may come again.
      Lease later = backend.newLease(settings("acquired-after-the-backup", "holder"));
      await("a lease acquired after the backup").atMost(PATIENCE).ignoreExceptions().until(() -> later.acquire().get(20, TimeUnit.SECONDS));
      afterBackupToken = later.fencingToken().orElseThrow();
      assertThat(afterBackupToken).isGreaterThan(Long.parseLong(revision.group(1)));
    }

    List<Integer> ports = List.of(RunningCli.freePortPair(), RunningCli.freePortPair(), RunningCli.freePortPair());
    List<Integer> httpPorts = List.of(RunningCli.freePortPair(), RunningCli.freePortPair(), RunningCli.freePortPair());
    String peers = "n1=127.0.0.1:" + ports.get(0) + ",n2=127.0.0.1:" + ports.get(1) + ",n3=127.0.0.1:" + ports.get(2);
    String uri = "leasehold://127.0.0.1:" + ports.get(0) + ",127.0.0.1:" + ports.get(1) + ",127.0.0.1:" + ports.get(2);
    List<RunningCli> servers = new ArrayList<>();
    long startedAt = System.nanoTime();
    try {
      for (int i = 1; i <= 3; i++) {
        servers.add(
            RunningCli.start(
                "server", "--id", "n" + i, "--peers", peers, "--data-dir", dir.resolve("new-n" + i).toString(),
                "--bootstrap", "--restore", file.toString(), "--bump-revision", String.valueOf(BUMP),
                "--election-timeout", "300ms", "--http-port", String.valueOf(httpPorts.get(i - 1))));
      }
      await("the restored cluster has a leader and the held lease's record")
          .atMost(PATIENCE)
          .until(() -> Cli.run("status", "--backend", uri).out().contains("held leases 1"));
      // A full TTL from the new leader: the time left is at least the TTL less the time since
      // the servers were started (the deadline was armed after that, a whole TTL ahead).
      long remaining = leaderRemainingMillis(httpPorts, "kept-through-restore");
      long sinceStart = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedAt);
      assertThat(remaining).as("time left of the restored session (%d ms since the servers started)", sinceStart)
          .isBetween(TTL.toMillis() - sinceStart, TTL.toMillis());
      try (LeaseBackend backend = LeaseBackend.open(uri)) {
        Lease taken = backend.newLease(settings("kept-through-restore", "someone-else"));
        assertThat(taken.acquire().get(20, TimeUnit.SECONDS)).as("another owner, while the restored record lives").isFalse();
        Lease fresh = backend.newLease(settings("new-after-restore", "someone"));
        // A restored cluster grants no name for the longest TTL in the backup: a holder of the old
        // cluster may still be working on a name taken after the backup.
        assertThat(fresh.acquire().get(20, TimeUnit.SECONDS)).as("a free name, right after the restore").isFalse();
        await("a new lease is granted, once the longest TTL has passed")
            .atMost(PATIENCE.plus(TTL)).ignoreExceptions().until(() -> fresh.acquire().get(20, TimeUnit.SECONDS));
        assertThat(fresh.fencingToken().orElseThrow())
            .as("the first token after the restore: above the old cluster's, by the bump")
            .isGreaterThan(heldToken + BUMP)
            .as("and above every token the old cluster issued after the backup")
            .isGreaterThan(afterBackupToken);


        // ...and then it expires like any other: the short-lived lease's holder never came back.
        Lease takeOver = backend.newLease(settings("short-lived", "someone-else"));
        await("the restored session of the short-lived lease expires").atMost(PATIENCE).ignoreExceptions()
            .until(() -> takeOver.acquire().get(20, TimeUnit.SECONDS));
        assertThat(takeOver.fencingToken().orElseThrow()).isGreaterThan(heldToken + BUMP);
      }
    } finally {
      servers.forEach(RunningCli::close);
    }
  }

  @Test
  void aDamagedBackupOrOneWithoutBootstrapIsRefusedBeforeAnythingStarts() throws Exception {
    Path dir = DevCommandTest.freshDir("bad-backup");
    Path file = dir.resolve("core.backup");
    try (LocalCluster old = LocalCluster.start(1, 0, dir.resolve("old"), c -> c.withElectionTimeout(Duration.ofMillis(300)))) {
      old.awaitLeader(PATIENCE);
      assertThat(Cli.run("admin", "snapshot", "save", file.toString(), "--backend", old.uri()).exitCode()).isZero();
    }
    int port = RunningCli.freePortPair();
    Path data = dir.resolve("new");
    String[] server = {"server", "--id", "n1", "--peers", "n1=127.0.0.1:" + port, "--data-dir", data.toString(), "--bootstrap"};

    byte[] good = Files.readAllBytes(file);
    byte[] flipped = good.clone();
    flipped[flipped.length - 1] ^= 1;
    Path corrupt = Files.write(dir.resolve("corrupt.backup"), flipped);
    Cli c = Cli.run(with(server, "--restore", corrupt.toString()));
    assertThat(c.exitCode()).as(c.err()).isEqualTo(2);
    assertThat(c.err()).contains("--restore: " + corrupt + " is corrupt: its SHA-256 does not match its contents");

    Path truncated = Files.write(dir.resolve("truncated.backup"), java.util.Arrays.copyOf(good, good.length - 10));
    Cli t = Cli.run(with(server, "--restore", truncated.toString()));
    assertThat(t.exitCode()).isEqualTo(2);
    assertThat(t.err()).contains("--restore: " + truncated + " is truncated");

    Path notBackup = Files.writeString(dir.resolve("notes.txt"), "hello");
    Cli n = Cli.run(with(server, "--restore", notBackup.toString()));
    assertThat(n.exitCode()).isEqualTo(2);
    assertThat(n.err()).contains("is not a Leasehold backup");

    Cli withoutBootstrap =
        Cli.run("server", "--id", "n1", "--peers", "n1=127.0.0.1:" + port, "--data-dir", data.toString(), "--restore", file.toString());
    assertThat(withoutBootstrap.exitCode()).isEqualTo(2);
    assertThat(withoutBootstrap.err()).contains("--restore seeds a new node: it needs --bootstrap");

    Cli badBump = Cli.run(with(server, "--restore", file.toString(), "--bump-revision", "-1"));
    assertThat(badBump.exitCode()).isEqualTo(2);
    assertThat(badBump.err()).contains("--bump-revision must be 0 to 1000000000000000; was -1");

    // A backup whose snapshot is of a newer format than this version reads (a newer version saved
    // it): refused before anything is created, not by a node that formatted its directory first.
    Backup saved = Backup.readFrom(file);
    byte[] newerBody = saved.body().clone();
    java.nio.ByteBuffer.wrap(newerBody).putInt(4, 99); // the snapshot header: magic, then format
    Path newer = dir.resolve("newer.backup");
    new Backup(saved.revision(), saved.takenAtMillis(), newerBody).writeTo(newer);
    Cli fromNewer = Cli.run(with(server, "--restore", newer.toString()));
    assertThat(fromNewer.exitCode()).as(fromNewer.err()).isEqualTo(2);
    assertThat(fromNewer.err()).contains("--restore: " + newer + " cannot be restored by this version: snapshot format 99 is"
        + " newer than this version of Leasehold reads");

    assertThat(data).as("nothing was created for a refused start").doesNotExist();

    // A restore onto a directory that holds anything is refused, and the directory left as it was.
    Path used = Files.createDirectories(dir.resolve("used"));
    Files.writeString(used.resolve("keep-me"), "data");
    Cli ontoData = Cli.run("server", "--id", "n1", "--peers", "n1=127.0.0.1:" + port, "--data-dir", used.toString(),
        "--bootstrap", "--restore", file.toString());
    assertThat(ontoData.exitCode()).as(ontoData.err()).isEqualTo(2);
    assertThat(ontoData.err()).contains("--bootstrap formats a new node, but --data-dir " + used + " is not empty (it holds keep-me)");
    assertThat(Files.list(used).map(p -> p.getFileName().toString())).containsExactly("keep-me");
    assertThat(used.resolve("keep-me")).hasContent("data");

    Cli saveNowhere = Cli.run("admin", "snapshot", "save", dir.resolve("no/such/dir/x").toString(), "--backend", "leasehold://127.0.0.1:" + port);
    assertThat(saveNowhere.exitCode()).isEqualTo(2);
    assertThat(saveNowhere.err()).contains("FILE must be a file in a writable directory");
  }

  private static LeaseSettings settings(String name, String owner) {
    return LeaseSettings.builder(name, owner).ttl(TTL).build();
  }

  /** {@return the time left of lease {@code name} as the leader counts it, from its status page} */
  private static long leaderRemainingMillis(List<Integer> httpPorts, String name) {
    Pattern lease = Pattern.compile("\\{\"name\":\"" + Pattern.quote(name) + "\",[^}]*\"remainingMillis\":(-?\\d+)\\}");
    HttpClient http = HttpClient.newHttpClient();
    long[] found = {-1};
    await("the leader's status page shows " + name).atMost(PATIENCE).ignoreExceptions().until(() -> {
      for (int port : httpPorts) {
        String json = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/status.json")).build(),
            HttpResponse.BodyHandlers.ofString()).body();
        Matcher m = lease.matcher(json);
        // Only the leader keeps the deadlines; the others say -1.
        if (m.find() && Long.parseLong(m.group(1)) >= 0) {
          found[0] = Long.parseLong(m.group(1));
          return true;
        }
      }
      return false;
    });
    return found[0];
  }

  private static String[] with(String[] args, String... more) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of(more));
    return all.toArray(String[]::new);
  }
}
