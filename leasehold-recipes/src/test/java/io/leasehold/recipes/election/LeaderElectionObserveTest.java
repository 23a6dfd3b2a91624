package io.leasehold.recipes.election;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseHolding;
import io.leasehold.LeaseSettings;
import io.leasehold.memory.MemoryBackend;
import io.leasehold.recipes.Cluster;
import java.time.Duration;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A follower observes the lease and takes over as soon as it frees. On virtual
 * time, with a 60 s TTL and a backoff of at least 15 s (30 s initial, drawn from [15 s, 30 s]):
 * a takeover within one virtual second of the release is explained by the observation only,
 * neither by an expiry nor by a retry.
 */
@Timeout(value = 1, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class LeaderElectionObserveTest {

  private static final Duration TTL = Duration.ofSeconds(60);

  private final Cluster cluster = new Cluster();
  private final MemoryBackend holderSide = cluster.store.connect();
  private final MemoryBackend followerSide = cluster.store.connect();
  private LeaderElection election;

  @AfterEach
  void close() {
    if (election != null) {
      cluster.close(election);
    }
    holderSide.close();
    followerSide.close();
  }

  private static LeaseSettings settings(String owner) {
    return LeaseSettings.builder("singleton", owner).ttl(TTL).build();
  }

  private LeaderElection follower(Lease lease, LeaseBackend observeOn) {
    LeaderElection.Builder b =
        LeaderElection.builder(lease, ctx -> new CountDownLatch(1).await())
            .scheduler(cluster.scheduler())
            .random(new SplittableRandom(7))
            .backoff(Duration.ofSeconds(30), Duration.ofSeconds(60));
    if (observeOn != null) {
      b.observing(observeOn);
    }
    return b.start();
  }

  private <T> T settle(CompletableFuture<T> f) {
    for (int i = 0; i < 10_000 && !f.isDone(); i++) {
      cluster.run(Cluster.STEP);
    }
    return f.join();
  }

  @Test
  void aFollowerTakesOverAsSoonAsTheObservedLeaseIsReleasedAndKnowsTheLeader() {
    Lease held = holderSide.newLease(settings("holder"));
    assertThat(settle(held.acquire())).isTrue();
    long heldToken = held.fencingToken().orElseThrow();
    Lease mine = followerSide.newLease(settings("follower"));
    election = follower(mine, followerSide);

    cluster.run(Duration.ofSeconds(1)); // refused, then observing
    assertThat(election.isLeader()).isFalse();
    assertThat(election.currentLeader())
        .as("the follower knows who leads")
        .map(h -> h.owner() + " " + h.token())
        .hasValue("holder " + heldToken);

    settle(held.release());
    for (int i = 0; i < 20 && !election.isLeader(); i++) {
      cluster.run(Cluster.STEP); // at most one virtual second: well below the 15 s backoff
    }

    assertThat(election.isLeader())
        .as("leads within a virtual second of the release (the next retry is 15-30 s away)")
        .isTrue();
    long myToken = mine.fencingToken().orElseThrow();
    assertThat(myToken).isGreaterThan(heldToken);
    assertThat(election.currentLeader())
        .map(LeaseHolding::holder)
        .hasValue(mine.holder().toString());
  }

  @Test
  void ofTwoObservingFollowersOneTakesOverAndTheOtherIsToldWhoLeadsNow() {
    MemoryBackend otherSide = cluster.store.connect();
    Lease held = holderSide.newLease(settings("holder"));
    assertThat(settle(held.acquire())).isTrue();
    Lease mine = followerSide.newLease(settings("follower-1"));
    Lease theirs = otherSide.newLease(settings("follower-2"));
    election = follower(mine, followerSide);
    LeaderElection other = follower(theirs, otherSide);
    try {
      cluster.run(Duration.ofSeconds(1));
      settle(held.release());
      for (int i = 0; i < 20 && !election.isLeader() && !other.isLeader(); i++) {
        cluster.run(Cluster.STEP);
      }
      cluster.run(Duration.ofSeconds(1)); // the loser's refusal and the winner's ACQUIRED

      assertThat(election.isLeader() ^ other.isLeader()).as("exactly one leads").isTrue();
      LeaderElection winner = election.isLeader() ? election : other;
      LeaderElection loser = winner == election ? other : election;
      assertThat(loser.currentLeader().map(LeaseHolding::holder))
          .as("the follower that lost is told who leads now")
          .hasValue(winner.lease().holder().toString());
    } finally {
      cluster.close(other);
      otherSide.close();
    }
  }

  @Test
  void aBackendThatCannotObserveLeavesTheElectionPollingWithItsBackoff() {
    Lease held = holderSide.newLease(settings("holder"));
    assertThat(settle(held.acquire())).isTrue();
    LeaseBackend cannotObserve =
        new LeaseBackend() { // observe() as the interface's default: unsupported
          @Override
          public Lease newLease(LeaseSettings settings) {
            return followerSide.newLease(settings);
          }

          @Override
          public String uri() {
            return "test:";
          }

          @Override
          public void close() {}
        };
    Lease mine = followerSide.newLease(settings("follower"));
    election = follower(mine, cannotObserve);
    cluster.run(Duration.ofSeconds(1));
    settle(held.release());

    cluster.run(Duration.ofSeconds(1));
    assertThat(election.isLeader()).as("nothing told it: it waits for its backoff").isFalse();
    assertThat(election.currentLeader()).isEqualTo(Optional.empty());
    cluster.run(Duration.ofSeconds(31));
    assertThat(election.isLeader()).as("the backoff retry took it").isTrue();
  }
}
