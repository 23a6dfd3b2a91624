package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.LeaseBackend;
import io.leasehold.recipes.membership.Member;
import io.leasehold.recipes.membership.Membership;
import io.leasehold.server.LocalCluster;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code leasehold members} against a real one-node core in this JVM. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag("integration")
class MembersCommandTest {

  @Test
  void listsTheMembersWithTheirDataThenWatchesALeave() throws Exception {
    try (LocalCluster cluster =
            LocalCluster.start(1, 0, DevCommandTest.freshDir("members"), c -> c.withElectionTimeout(Duration.ofMillis(300)));
        LeaseBackend backend = LeaseBackend.open(cluster.uri())) {
      Member member =
          await("node-1 joins").atMost(Duration.ofSeconds(30)).ignoreExceptions()
              .until(
                  () -> Membership.join(backend, "workers", "node-1")
                      .data(Map.of("address", "10.0.0.1:8080"))
                      .maxMembers(4)
                      .settings(b -> b.ttl(Duration.ofSeconds(5)))
                      .join()
                      .get(20, TimeUnit.SECONDS),
                  m -> m != null);

      Cli text = Cli.run("members", "workers", "--backend", cluster.uri(), "--max-members", "4");
      Cli json = Cli.run("members", "workers", "--backend", cluster.uri(), "--max-members", "4", "--json");
      System.out.print(text.out() + json.out()); // real output, as docs/cli.md shows it
      assertThat(text.exitCode()).as(text.err()).isZero();
      assertThat(text.out())
          .isEqualTo("group 'workers' has 1 member (of 4 slots)%n  node-1 slot %d token %d address=10.0.0.1:8080%n"
              .formatted(member.slot(), member.token()));
      assertThat(json.out().strip())
          .isEqualTo("{\"group\":\"workers\",\"maxMembers\":4,\"members\":[{\"memberId\":\"node-1\",\"holder\":\""
              + member.lease().holder() + "\",\"slot\":" + member.slot() + ",\"token\":" + member.token()
              + ",\"data\":{\"address\":\"10.0.0.1:8080\"}}]}");

      StringWriter out = new StringWriter();
      StringWriter err = new StringWriter();
      CompletableFuture<Integer> watching =
          CompletableFuture.supplyAsync(
              () -> Main.commandLine()
                  .setOut(new PrintWriter(out, true))
                  .setErr(new PrintWriter(err, true))
                  .execute("members", "workers", "--backend", cluster.uri(), "--max-members", "4", "--watch",
                      "--count", "2"));
      await("the watch prints the member").atMost(Duration.ofSeconds(30)).until(() -> out.toString().contains("JOINED"));
      member.leave().get(20, TimeUnit.SECONDS);
      assertThat(watching.get(60, TimeUnit.SECONDS)).as(err.toString()).isZero();
      System.out.print(out);
      List<String> lines = out.toString().lines().map(l -> l.substring(l.indexOf(' ') + 1)).toList();
      String seen = "node-1 slot " + member.slot() + " token " + member.token() + " address=10.0.0.1:8080";
      assertThat(lines).containsExactly("JOINED " + seen, "LEFT " + seen + " RELEASED");

      Cli none = Cli.run("members", "workers", "--backend", cluster.uri(), "--max-members", "4");
      assertThat(none.out()).isEqualTo("group 'workers' has no members%n".formatted());

      // --join: a member from the shell, until interrupted (Ctrl-C in a terminal).
      StringWriter joinOut = new StringWriter();
      StringWriter joinErr = new StringWriter();
      CompletableFuture<Integer> joined = new CompletableFuture<>();
      Thread shell =
          new Thread(
              () -> joined.complete(
                  Main.commandLine()
                      .setOut(new PrintWriter(joinOut, true))
                      .setErr(new PrintWriter(joinErr, true))
                      .execute("members", "workers", "--backend", cluster.uri(), "--max-members", "4",
                          "--join", "node-2", "--data", "address=10.0.0.2:8080", "--ttl", "5s")));
      shell.start();
      await("the shell member joins").atMost(Duration.ofSeconds(30))
          .until(() -> joinOut.toString().contains("joined group 'workers' as node-2"));
      assertThat(Membership.list(backend, "workers", 4).get(20, TimeUnit.SECONDS))
          .extracting(m -> m.memberId() + " " + m.data())
          .containsExactly("node-2 {address=10.0.0.2:8080}");
      shell.interrupt();
      assertThat(joined.get(60, TimeUnit.SECONDS)).as(joinErr.toString()).isZero();
      System.out.print(joinOut);
      assertThat(joinOut.toString()).endsWith("left group 'workers'%n".formatted());
      assertThat(Membership.list(backend, "workers", 4).get(20, TimeUnit.SECONDS)).isEmpty();
    }
  }

  @Test
  void badOptionsExit2WithAClearMessage() {
    Cli max = Cli.run("members", "workers", "--backend", "memory:", "--max-members", "2000");
    assertThat(max.exitCode()).isEqualTo(2);
    assertThat(max.err()).contains("--max-members must be between 1 and 1024; was 2000").doesNotContain("\tat ");
    Cli count = Cli.run("members", "workers", "--backend", "memory:", "--count", "3");
    assertThat(count.exitCode()).isEqualTo(2);
    assertThat(count.err()).contains("--count needs --watch");
    Cli group = Cli.run("members", "g".repeat(250), "--backend", "memory:");
    assertThat(group.exitCode()).isEqualTo(2);
    assertThat(group.err()).contains("GROUP: group '" + "g".repeat(250) + "' does not make valid slot lease names");
    Cli data = Cli.run("members", "workers", "--backend", "memory:", "--data", "k=v");
    assertThat(data.exitCode()).isEqualTo(2);
    assertThat(data.err()).contains("--data needs --join");
    Cli key = Cli.run("members", "workers", "--backend", "memory:", "--join", "n", "--data", "bad key=v");
    assertThat(key.exitCode()).isEqualTo(2);
    assertThat(key.err()).contains("--data: data key may contain only A-Z a-z 0-9 . _ -; found ' '");
    Cli both = Cli.run("members", "workers", "--backend", "memory:", "--join", "n", "--watch");
    assertThat(both.exitCode()).isEqualTo(2);
    assertThat(both.err()).contains("--join cannot be combined with --watch, --json or --count");
    Cli empty = Cli.run("members", "workers", "--backend", "memory:");
    assertThat(empty.exitCode()).isZero();
    assertThat(empty.out()).isEqualTo("group 'workers' has no members%n".formatted());
  }

  @Test
  void aMaxMembersSmallerThanTheGroupsSaysTheSlotCountDiffers() throws Exception {
    try (LocalCluster cluster =
            LocalCluster.start(1, 0, DevCommandTest.freshDir("members-slots"), c -> c.withElectionTimeout(Duration.ofMillis(300)));
        LeaseBackend backend = LeaseBackend.open(cluster.uri())) {
      // A member of a group of 64 slots, in slot 40: beyond the 4 slots asked for below.
      io.leasehold.Lease slot40 = backend.newLease(
          io.leasehold.LeaseSettings.builder(Membership.slotName("wide", 40), "node-9").ttl(Duration.ofSeconds(30)).build());
      await("node-9 takes slot 40").atMost(Duration.ofSeconds(30)).ignoreExceptions()
          .until(() -> slot40.acquire().get(20, TimeUnit.SECONDS));

      Cli narrow = Cli.run("members", "wide", "--backend", cluster.uri(), "--max-members", "4");

      assertThat(narrow.exitCode()).as(narrow.out() + narrow.err()).isEqualTo(2);
      assertThat(narrow.out()).doesNotContain("has no members");
      assertThat(narrow.err()).contains(
          "--max-members 4 is not the group's slot count: slot 40 of group 'wide' is held, so its members joined with"
              + " --max-members 41 or more");
      Cli wide = Cli.run("members", "wide", "--backend", cluster.uri());
      assertThat(wide.exitCode()).as(wide.err()).isZero();
      assertThat(wide.out()).contains("group 'wide' has 1 member (of 64 slots)");
      slot40.release().get(20, TimeUnit.SECONDS);
    }
  }
}
