package io.leasehold.server.raft;

import io.leasehold.server.replicated.CoreState;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.ratis.client.retry.ClientRetryEvent;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftGroupMemberId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.exceptions.LeaderNotReadyException;
import org.apache.ratis.protocol.exceptions.ResourceUnavailableException;
import org.apache.ratis.retry.RetryPolicy;
import org.apache.ratis.util.Timestamp;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;

/**
 * The node's internal Ratis client, which forwards calls to the leader: how long it pauses between
 * attempts, and when it stops making them.
 */
class ForwardRetryPolicyTest {

  /** Far enough into the backoff that its pause is at its 100 ms cap (±50 %). */
  private static final int LATE_ATTEMPT = 12;

  private final AtomicBoolean leaderUp = new AtomicBoolean();
  private final RetryPolicy policy = RaftGateway.forwardRetryPolicy(leaderUp::get);
  private final RaftClientRequest request =
      RaftClientRequest.newBuilder()
          .setClientId(ClientId.randomId())
          .setServerId(RaftPeerId.valueOf("n1"))
          .setGroupId(RaftGroupId.randomId())
          .setCallId(1)
          .setMessage(Message.EMPTY)
          .setType(RaftClientRequest.writeRequestType())
          .build();

  private long pauseMillis(int attempt, Throwable cause) {
    RetryPolicy.Action action =
        policy.handleAttemptFailure(new ClientRetryEvent(attempt, request, 1, cause, Timestamp.currentTime()));
    assertThat(action.shouldRetry()).as("attempt %d is retried", attempt).isTrue();
    return action.getSleepTime().toLong(TimeUnit.MILLISECONDS);
  }

  @RepeatedTest(20)
  void duringAnElectionLateAttemptsPauseTheFullBackoff() {
    leaderUp.set(false);
    assertThat(pauseMillis(LATE_ATTEMPT, new IOException("no leader"))).isGreaterThan(RaftGateway.LEADER_UP_MAX_PAUSE_MS);
  }

  @RepeatedTest(20)
  void whileALeaderIsUpLateAttemptsPauseBriefly() {
    leaderUp.set(true);
    assertThat(pauseMillis(LATE_ATTEMPT, new IOException("not the leader")))
        .isBetween(RaftGateway.LEADER_UP_MAX_PAUSE_MS / 2, RaftGateway.LEADER_UP_MAX_PAUSE_MS);
  }

  @RepeatedTest(20)
  void aLeaderThatIsNotReadyYetIsAskedAgainSoonEvenIfThisNodeHasNotHeardOfIt() {
    leaderUp.set(false);
    LeaderNotReadyException notReady =
        new LeaderNotReadyException(RaftGroupMemberId.valueOf(RaftPeerId.valueOf("n2"), RaftGroupId.randomId()));
    assertThat(pauseMillis(LATE_ATTEMPT, notReady)).isLessThanOrEqualTo(RaftGateway.LEADER_UP_MAX_PAUSE_MS);
  }

  @RepeatedTest(20)
  void earlyPausesShorterThanTheCutAreKept() {
    leaderUp.set(true);
    // Attempt 0's backoff is 2.5-7.5 ms, below the 10-20 ms a cut pause would be.
    assertThat(pauseMillis(0, new IOException("not the leader"))).isLessThan(RaftGateway.LEADER_UP_MAX_PAUSE_MS / 2);
  }

  @RepeatedTest(20)
  void anOverloadedLeaderGetsTheFullBackoffEvenWhileUp() {
    leaderUp.set(true);
    assertThat(pauseMillis(LATE_ATTEMPT, new ResourceUnavailableException("overloaded")))
        .isGreaterThan(RaftGateway.LEADER_UP_MAX_PAUSE_MS);
  }

  @Test
  void theNodesRatisClientMakesNoNewAttemptOnceItsWindowHasPassed() {
    leaderUp.set(true);
    long windowMillis = RaftGateway.FORWARD_WINDOW.minus(RaftGateway.QUEUE_WAIT).toMillis();
    Timestamp fresh = Timestamp.currentTime();
    Timestamp old = Timestamp.currentTime().addTimeMs(-windowMillis - 1);
    assertThat(policy.handleAttemptFailure(new ClientRetryEvent(1_000, request, 1, new IOException(), fresh)).shouldRetry())
        .as("many attempts, still within the window")
        .isTrue();
    assertThat(policy.handleAttemptFailure(new ClientRetryEvent(2, request, 1, new IOException(), old)).shouldRetry())
        .as("the window has passed")
        .isFalse();
    assertThat(RaftGateway.FORWARD_WINDOW.toMillis() + 10_000).as("room left for the network").isLessThanOrEqualTo(CoreState.MAX_CALL_DELAY_MILLIS);
  }
}
