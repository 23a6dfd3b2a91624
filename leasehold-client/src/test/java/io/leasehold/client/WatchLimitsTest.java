package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * A watch the core ended over one of its limits is opened again on the same node after a pause;
 * any other end moves it to another node at the watch's own pace. (CoreLimitsTest runs on one
 * node, where both look alike.)
 */
class WatchLimitsTest {

  private static final long OWN_PAUSE = TimeUnit.MILLISECONDS.toNanos(100);

  private static CoreClient threeNodes() {
    return new CoreClient(
        List.of(InetSocketAddress.createUnresolved("127.0.0.1", 7000), InetSocketAddress.createUnresolved("127.0.0.1", 7002),
            InetSocketAddress.createUnresolved("127.0.0.1", 7004)),
        Duration.ofSeconds(1));
  }

  @Test
  void overALimitTheSameNodeAgainAfterTheLimitsPause() {
    try (CoreClient client = threeNodes()) {
      Throwable ended = Status.RESOURCE_EXHAUSTED.withDescription("watcher fell behind by 10001 events").asRuntimeException();
      long pause = WatchLimits.afterEnd(ended, client, LoggerFactory.getLogger(WatchLimitsTest.class), "test watch", 42, OWN_PAUSE);
      assertThat(pause).isEqualTo(WatchLimits.RETRY_NANOS);
      assertThat(client.currentNode()).as("no failover").isZero();
    }
  }

  @Test
  void anyOtherEndMovesToAnotherNodeAtTheWatchsOwnPace() {
    try (CoreClient client = threeNodes()) {
      Throwable ended = Status.UNAVAILABLE.withDescription("io exception").asRuntimeException();
      assertThat(WatchLimits.afterEnd(ended, client, LoggerFactory.getLogger(WatchLimitsTest.class), "test watch", 42, OWN_PAUSE))
          .isEqualTo(OWN_PAUSE);
      assertThat(client.currentNode()).isEqualTo(1);
      assertThat(WatchLimits.afterEnd(null, client, LoggerFactory.getLogger(WatchLimitsTest.class), "test watch", 42, OWN_PAUSE))
          .as("a stream that completed").isEqualTo(OWN_PAUSE);
      assertThat(client.currentNode()).isEqualTo(2);
    }
  }
}
