package io.leasehold.bench.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link ManagedCluster#awaitCaughtUp} under writes: the leader's applied index moves on between
 * any two reads, and the member follows it one write behind. A wait that compares the member with
 * the leader's index of the moment never ends (bench failover stalled that way before its first
 * kill); one that reads the leader's index once, first, ends.
 */
@Timeout(30)
class AwaitCaughtUpTest {

  /**
   * Member 0 leads; each read of anyone's index comes one write later; member 1 has applied all
   * but the last {@link #LAG} writes.
   */
  private static class Busy implements ManagedCluster {
    static final int LAG = 3;
    private long writes = 100;
    private int readsOfMember;

    @Override
    public synchronized OptionalLong appliedIndex(int i) {
      writes++;
      if (i == 0) {
        return OptionalLong.of(writes);
      }
      readsOfMember++;
      return OptionalLong.of(writes - LAG);
    }

    @Override
    public boolean tellsAppliedIndex() {
      return true;
    }

    @Override
    public Optional<Integer> leader() {
      return Optional.of(0);
    }

    @Override
    public String name() {
      return "busy";
    }

    @Override
    public String backendUri() {
      return "memory:";
    }

    @Override
    public String settings() {
      return "busy: a fake";
    }

    @Override
    public List<Member> members() {
      return List.of(new Member("m0", "-", Optional.empty()), new Member("m1", "-", Optional.empty()));
    }

    @Override
    public void kill(int i) {}

    @Override
    public void restart(int i) {}

    @Override
    public void close() {}
  }

  @Test
  void aMemberThatFollowsTheLeaderUnderWritesIsCaughtUp() throws InterruptedException {
    Busy cluster = new Busy();
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();

    assertThat(cluster.awaitCaughtUp(1, deadline)).as("member 1 caught up").isTrue();
    assertThat(cluster.readsOfMember).as("member 1 was asked until it had the leader's first index").isGreaterThan(1);
  }

  @Test
  void aMemberThatNeverAnswersIsNotCaughtUp() throws InterruptedException {
    Busy cluster =
        new Busy() {
          @Override
          public synchronized OptionalLong appliedIndex(int i) {
            return i == 1 ? OptionalLong.empty() : super.appliedIndex(i);
          }
        };
    assertThat(cluster.awaitCaughtUp(1, System.nanoTime() + Duration.ofMillis(300).toNanos())).isFalse();
  }
}
