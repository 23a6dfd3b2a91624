package io.leasehold.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.LeaseState;
import io.leasehold.Subscription;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The example of docs/watch.md, run as written (on the memory backend); it prints what the page shows. */
@Timeout(60)
class WatchExampleTest {

  @Test
  void theExampleOfTheWatchPageRunsAsShown() {
    List<String> printed = new CopyOnWriteArrayList<>();
    try (LeaseBackend backend = LeaseBackend.open("memory:")) {
      // --- as on docs/watch.md ---
      Subscription watching = backend.observe("orders-compactor", event -> printed.add(event.toString()));

      Lease lease = backend.newLease(LeaseSettings.builder("orders-compactor", "node-1").build());
      lease.acquire().join();
      lease.attach("address", "10.0.0.7:8080").join();

      LeaseState state = backend.read("orders-compactor").join();
      String read = state.holding().orElseThrow().owner() + " " + state.attached();

      lease.release().join();
      // ---
      await().atMost(Duration.ofSeconds(30)).until(() -> printed.size() >= 3);
      watching.cancel();
      System.out.println(read);
      assertThat(read).isEqualTo("node-1 {address=10.0.0.7:8080}");
    }
    printed.forEach(System.out::println);
    String holder = "node-1#";
    assertThat(printed).hasSize(3);
    assertThat(printed.get(0)).isEqualTo("CURRENT orders-compactor free");
    assertThat(printed.get(1)).startsWith("ACQUIRED orders-compactor " + holder).endsWith(" token 1");
    assertThat(printed.get(2)).startsWith("RELEASED orders-compactor " + holder).endsWith(" token 1");
  }
}
