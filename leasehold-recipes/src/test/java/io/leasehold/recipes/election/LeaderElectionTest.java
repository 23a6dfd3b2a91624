package io.leasehold.recipes.election;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.Lease;
import io.leasehold.memory.StoredLease;
import io.leasehold.recipes.Cluster.Node;
import io.leasehold.recipes.Cluster;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Leader election on the memory store, on virtual time, with real threads for the work. */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class LeaderElectionTest {

  private final Cluster cluster = new Cluster();

  @AfterEach
  void close() {
    cluster.close();
  }

  @Test
  void exactlyOneOfThreeLeadsAndRunsTheWork() {
    Node a = cluster.node("a");
    Node b = cluster.node("b");
    Node c = cluster.node("c");
    a.election.start();
    b.election.start();
    c.election.start();

    cluster.run(Duration.ofSeconds(30));

    assertThat(cluster.leader()).isNotNull();
    assertThat(cluster.register.tokens).as("one term, never given up").hasSize(1);
    assertThat(cluster.leader().events).containsExactly("started " + cluster.register.tokens.get(0));
    assertThat(cluster.register.overlaps).isEmpty();
    assertThat(cluster.twoLeadersAtOnce).hasValue(0);
  }

  @Test
  void leadershipMovesEachTimeTheLeaderIsCutOff() {
    Node a = cluster.node("a");
    Node b = cluster.node("b");
    Node c = cluster.node("c");
    a.election.start();
    cluster.runUntilLeader(a, Duration.ofSeconds(5));
    b.election.start();
    c.election.start();

    for (int round = 0; round < 5; round++) {
      Node old = cluster.leader();
      long oldToken = old.lease.fencingToken().orElseThrow();
      old.backend.cutOff();
      cluster.run(Cluster.TTL.multipliedBy(2));
      Node next = cluster.leader();

      assertThat(next).as("round %d: a new leader", round).isNotNull().isNotSameAs(old);
      assertThat(next.lease.fencingToken().orElseThrow()).isGreaterThan(oldToken);
      assertThat(old.events).contains("stopped " + oldToken + " LOST");
      assertThat(old.workRunning()).isFalse();
      old.backend.heal();
      cluster.run(Duration.ofSeconds(1));
    }

    assertThat(cluster.register.tokens).hasSize(6).isSorted();
    assertThat(cluster.register.overlaps).isEmpty();
    assertThat(cluster.twoLeadersAtOnce).hasValue(0);
  }

  @Test
  void leadershipMovesWhenTheLeaderCrashes() {
    Node a = cluster.node("a");
    Node b = cluster.node("b");
    a.election.start();
    cluster.runUntilLeader(a, Duration.ofSeconds(5));
    b.election.start();
    cluster.run(Duration.ofSeconds(5));
    assertThat(b.election.isLeader()).isFalse();

    a.crash();
    cluster.runUntilLeader(b, Cluster.TTL.multipliedBy(2));

    assertThat(cluster.register.tokens).hasSize(2).isSorted();
    assertThat(cluster.register.overlaps).isEmpty();
    assertThat(cluster.twoLeadersAtOnce).hasValue(0);
  }

  /**
   * A paused process (a long GC, SIGSTOP) runs no timer and no handler. Its application threads
   * must still see it is not the leader once the deadline passes, and on resume its work is
   * stopped; meanwhile another process led.
   */
  @Test
  void aPausedLeaderIsNoLongerLeaderAtItsDeadlineAndStopsOnResume() {
    Node a = cluster.node("a");
    Node b = cluster.node("b");
    a.election.start();
    cluster.runUntilLeader(a, Duration.ofSeconds(5));
    b.election.start();
    Duration left = a.lease.remaining();

    a.frozen = true;
    a.backend.pause();
    cluster.clock.advance(left.minusMillis(1));
    assertThat(a.election.isLeader()).isTrue();
    cluster.clock.advance(Duration.ofMillis(1));
    assertThat(a.election.isLeader()).as("at the deadline, with no timer run").isFalse();
    cluster.runUntilLeader(b, Cluster.TTL.multipliedBy(2));
    a.frozen = false;
    a.backend.resume();
    cluster.run(Duration.ofSeconds(1));

    assertThat(a.workRunning()).as("interrupted on resume").isFalse();
    assertThat(a.events).contains("stopped 1 LOST");
    assertThat(b.election.isLeader()).isTrue();
    assertThat(cluster.twoLeadersAtOnce).hasValue(0);
  }

  @Test
  void aLossInterruptsTheWorkAtOnce() {
    Node a = cluster.node("a");
    a.election.start();
    cluster.runUntilLeader(a, Duration.ofSeconds(5));

    cluster.store.revoke("singleton");
    cluster.clock.advance(Duration.ZERO); // the revocation's notice, then the onLost handler
    cluster.settle();

    assertThat(a.workRunning()).isFalse();
    assertThat(a.election.isLeader()).isFalse();
    assertThat(a.events).contains("stopped 1 LOST");
  }

  /**
   * A work that ignores the interrupt keeps its process from leading again: a new term waits for
   * the last term's work to end, even though the store would grant the lease at once.
   */
  @Test
  void aNewTermWaitsUntilTheLastTermsWorkHasEnded() {
    CountDownLatch letGo = new CountDownLatch(1);
    AtomicInteger terms = new AtomicInteger();
    Node a =
        cluster.node(
            "a",
            ctx -> {
              if (terms.incrementAndGet() > 1) {
                new CountDownLatch(1).await(); // later terms stop when told
              }
              while (letGo.getCount() > 0) {
                try {
                  letGo.await();
                } catch (InterruptedException stubborn) {
                  // ignores interruption until the test lets it go
                }
              }
            });
    a.election.start();
    cluster.runUntilLeader(a, Duration.ofSeconds(5));

    cluster.store.revoke("singleton");
    for (int i = 0; i < 600; i++) {
      cluster.clock.advance(Cluster.STEP); // 30 s: many backoffs' worth
    }
    assertThat(a.lease.checkAlive()).as("not acquired again while the old work runs").isFalse();
    assertThat(a.workRunning()).isTrue();

    letGo.countDown();
    cluster.runUntilLeader(a, Duration.ofSeconds(30));

    assertThat(cluster.register.tokens).hasSize(2);
    assertThat(cluster.register.overlaps).isEmpty();
  }

  @Test
  void closeStopsTheWorkBeforeItReleasesSoAnotherLeadsAtOnce() {
    Node a = cluster.node("a");
    Node b = cluster.node("b");
    a.election.start();
    cluster.runUntilLeader(a, Duration.ofSeconds(5));
    b.election.start();
    cluster.run(Duration.ofSeconds(1));

    cluster.close(a.election);

    assertThat(a.workRunning()).as("ended before close returned").isFalse();
    assertThat(a.lease.checkAlive()).isFalse();
    assertThat(cluster.store.lookup("singleton").map(StoredLease::holder))
        .as("released in the store (b may hold it already)")
        .isNotEqualTo(Optional.of(a.lease.holder()));
    cluster.runUntilLeader(b, Duration.ofSeconds(5)); // within one backoff, not a TTL
    cluster.clock.advance(Duration.ZERO);
    assertThat(a.events).endsWith("stopped 1 CLOSED");
    assertThat(cluster.register.overlaps).isEmpty();
  }

  @Test
  void workThatReturnsGivesTheLeaseUpAndTheElectionContendsAgain() {
    Node a = cluster.node("a", ctx -> {});
    a.election.start();

    cluster.run(Duration.ofSeconds(3));

    assertThat(cluster.register.tokens).as("term after term").hasSizeGreaterThan(2).isSorted();
    assertThat(a.events).contains("stopped 1 WORK_RETURNED");
  }

  @Test
  void workThatThrowsEndsItsTermAndIsReported() {
    Node a = cluster.node("a", ctx -> { throw new IllegalStateException("boom"); });
    a.election.start();

    cluster.run(Duration.ofSeconds(1));

    assertThat(a.events).contains("stopped 1 WORK_FAILED");
  }

  @Test
  void theWorkSeesItsTokenAndWhetherItStillLeads() {
    CountDownLatch seen = new CountDownLatch(1);
    long[] token = new long[1];
    Node a =
        cluster.node(
            "a",
            ctx -> {
              token[0] = ctx.fencingToken();
              if (ctx.isLeader()) {
                seen.countDown();
              }
              new CountDownLatch(1).await();
            });
    a.election.start();
    cluster.runUntilLeader(a, Duration.ofSeconds(5));

    assertThat(seen.getCount()).isZero();
    assertThat(token[0]).isEqualTo(a.lease.fencingToken().orElseThrow());
  }

  @Test
  void startTwiceIsRejectedAndBadBackoffsNameTheSetting() {
    Node a = cluster.node("a");
    a.election.start();
    assertThatThrownBy(a.election::start).isInstanceOf(IllegalStateException.class);

    Lease lease = a.lease;
    assertThatThrownBy(
            () -> LeaderElection.builder(lease, ctx -> {}).backoff(Duration.ZERO, Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("backoff initial")
        .hasMessageContaining("PT0S");
    assertThatThrownBy(
            () ->
                LeaderElection.builder(lease, ctx -> {})
                    .backoff(Duration.ofSeconds(2), Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("backoff max");
  }
}
