package io.leasehold.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseLost;
import io.leasehold.Ticker;
import io.leasehold.testkit.LossRecorder;
import io.leasehold.testkit.SuiteSettings;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code acquire()} while holding is one round trip that confirms the tenure in the store. On
 * ZooKeeper a renewal is answered from a probe of the session shared by every lease (up to a
 * twentieth of the TTL old) and from the watch on the holder node; neither is the store as of the
 * call when the watch event of a change is still on its way. The test holds that event back, so
 * the holder's watch has not told it of the delete, and asks.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class ZooKeeperConfirmTest {

  private static final String CHROOT = "/confirm";
  /** Long enough that no deadline passes in a test: every loss here is the store's word. */
  private static final Duration TTL = Duration.ofSeconds(10);

  @RegisterExtension static final StandaloneZooKeeper zk = new StandaloneZooKeeper(CHROOT);

  @Test
  void anAcquireWhileHoldingFindsTheHolderNodeDeletedBeforeTheWatchSaysSo() throws Exception {
    try (ZooKeeperBackend backend = open()) {
      Lease a = backend.newLease(SuiteSettings.forTtl("deleted", "owner-a", TTL).build());
      LossRecorder losses = new LossRecorder(Ticker.system());
      a.onLost(losses);
      assertThat(a.acquire().get()).isTrue();
      long token = a.fencingToken().orElseThrow();
      HeldBackEvents events = new HeldBackEvents();
      backend.store().handleHolderEventsOn(events);

      zk.admin().delete().forPath(CHROOT + ZNodes.holderNode("deleted"));
      await("the delete's watch event reaches the holder, and is held back")
          .atMost(Duration.ofSeconds(30))
          .until(() -> events.count() > 0);
      boolean again = a.acquire().get();

      assertThat(losses.count()).as("onLost calls for the deleted tenure").isEqualTo(1);
      assertThat(losses.first().reason().kind()).isEqualTo(LeaseLost.Kind.REVOKED);
      assertThat(again).as("a fresh acquisition follows the loss; the name is free").isTrue();
      assertThat(a.fencingToken().orElseThrow()).as("a new tenure").isGreaterThan(token);

      events.release();
      assertThat(a.fencingToken()).as("the late event ends nothing").hasValue(
          zk.admin().checkExists().forPath(CHROOT + ZNodes.holderNode("deleted")).getCzxid());
      assertThat(losses.count()).isEqualTo(1);
    }
  }

  private static ZooKeeperBackend open() {
    return ZooKeeperBackend.open(
        ZooKeeperUri.parse(ZooKeeperServers.uri(zk.server().getConnectString(), CHROOT, TTL)));
  }
}
