package io.leasehold.server.admin;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.apache.ratis.protocol.exceptions.RaftRetryFailureException;
import org.apache.ratis.retry.RetryPolicies;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What {@code leasehold admin add-node} prints when the change fails. Found in the stop-19 fault
 * run: it printed Ratis's request dump ("RaftRetryFailureException: Failed
 * SetConfigurationRequest:client-… for 20 attempts with RetryLimited(…)") and nothing to do.
 */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
class MembershipRefusalTest {

  @Test
  void aChangeTheLeaderNeverAnsweredSaysWhatToDoWithoutRatissDump() {
    RaftRetryFailureException gaveUp = new RaftRetryFailureException(null, 20, RetryPolicies.retryUpToMaximumCountWithFixedSleep(
        20, org.apache.ratis.util.TimeDuration.valueOf(200, TimeUnit.MILLISECONDS)), null);

    String said = MembershipChanges.refusal(new CompletionException(gaveUp), "add n4").getMessage();

    assertThat(said)
        .startsWith("the leader did not answer the change (add n4)")
        .contains("run the same command again")
        .doesNotContain("RaftRetryFailureException", "RetryLimited", "Failed ");
  }

  @Test
  void anyOtherFailureGivesItsMessageWithoutTheExceptionsClass() {
    String said = MembershipChanges.refusal(new CompletionException(new java.io.IOException("disk full")), "remove n3")
        .getMessage();

    assertThat(said).isEqualTo("the change (remove n3) failed: disk full");
  }
}
