package io.leasehold.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseEvent;
import io.leasehold.LeaseSettings;
import io.leasehold.testkit.SuiteSettings;
import io.leasehold.testkit.TcpProxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An observer on Kubernetes whose connection is cut and reset while the lease changes hands
 * three times is told either every change in order or a GAP with the state read again — never a
 * single ACQUIRED as if one change had happened (leaseTransitions says how many tenures began).
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class KubernetesObserveTest {

  @Test
  void anObserverWhoseConnectionIsResetWhileTheLeaseChangesHandsMissesNothing() {
    List<LeaseEvent> seen = new CopyOnWriteArrayList<>();
    try (MockApiServer server = new MockApiServer();
        TcpProxy proxy = TcpProxy.start(server.address());
        KubernetesBackend watcher = KubernetesBackend.using(MockApiServer.client(proxy.address()), MockApiServer.NAMESPACE);
        KubernetesBackend holders = KubernetesBackend.using(MockApiServer.client(server.address()), MockApiServer.NAMESPACE)) {
      watcher.observe("handed-over", seen::add);
      await().atMost(Duration.ofSeconds(30)).until(() -> seen.size() == 1);
      Lease a = holders.newLease(settings("owner-a"));
      Lease b = holders.newLease(settings("owner-b"));

      proxy.blackhole();
      assertThat(a.acquire().join()).isTrue();
      long tokenOfA = a.fencingToken().orElseThrow();
      a.release().join();
      assertThat(b.acquire().join()).isTrue();
      long tokenOfB = b.fencingToken().orElseThrow();
      proxy.dropConnections();
      proxy.heal();

      String last = "ACQUIRED owner-b " + tokenOfB;
      String gap = "GAP owner-b " + tokenOfB;
      await().atMost(Duration.ofSeconds(60)).untilAsserted(() ->
          assertThat(summaries(seen)).as("what the observer was told").containsAnyOf(last, gap));
      if (summaries(seen).contains(gap)) {
        assertThat(summaries(seen)).containsExactly("CURRENT free", gap);
      } else {
        assertThat(summaries(seen)).containsExactly(
            "CURRENT free", "ACQUIRED owner-a " + tokenOfA, "RELEASED owner-a " + tokenOfA, last);
      }
    }
  }

  private static LeaseSettings settings(String owner) {
    return SuiteSettings.forTtl("handed-over", owner, Duration.ofSeconds(3)).build();
  }

  private static List<String> summaries(List<LeaseEvent> seen) {
    return seen.stream()
        .map(e -> e.type() + " " + e.holding().map(h -> h.owner() + " " + h.token()).orElse("free"))
        .toList();
  }
}
