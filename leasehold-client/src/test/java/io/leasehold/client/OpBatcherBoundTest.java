package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.server.replicated.CoreState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The core answers a copy of an applied call from the replies it keeps per client; a copy whose
 * reply it dropped gets "too late", which this client reports as an unknown outcome. So that an
 * applied batch sent again is always answered, a client never has more batched writes out than
 * half the replies kept (the rest is room for its unary calls: grants, revokes, ACL changes).
 */
@Timeout(10)
class OpBatcherBoundTest {

  @Test
  void theWritesAClientHasOutFitInTheRepliesTheCoreKeepsForIt() {
    int inFlight = OpBatcher.MAX_CALLS_IN_FLIGHT * OpBatcher.MAX_OPS_PER_CALL;
    assertThat(inFlight).isLessThanOrEqualTo(CoreState.REPLIES_KEPT_PER_CLIENT / 2);
  }
}
