package io.leasehold.recipes.membership;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.LeaseBackend;
import io.leasehold.LeaseEvent;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The example of docs/recipes.md's Membership section, run as written on {@code memory:}. */
@Timeout(60)
class MembershipExampleTest {

  @Test
  void theExampleOfTheRecipesPageRunsAsShown() {
    List<String> printed = new CopyOnWriteArrayList<>();
    Runnable stopServing = () -> printed.add("stopped serving");
    List<GroupMember> now;
    try (LeaseBackend backend = LeaseBackend.open("memory:")) {
      // --- as on docs/recipes.md ---
      GroupView view = Membership.observe(backend, "workers", new GroupListener() {
        @Override public void joined(GroupMember m) { printed.add("joined " + m); }
        @Override public void left(GroupMember m, LeaseEvent.Type why) { printed.add("left " + m.memberId() + " " + why); }
      });

      Member me = Membership.join(backend, "workers", "node-1")
          .data(Map.of("address", "10.0.0.7:8080"))
          .join().join();                    // a free slot acquired, the data attached to it
      me.onLeft(lost -> stopServing.run());  // cut off or paused: told before anyone can take the slot

      now = Membership.list(backend, "workers", Membership.DEFAULT_MAX_MEMBERS).join();
      await().atMost(Duration.ofSeconds(30)).until(() -> view.members().size() == 1);

      me.leave().join();                     // observers see it leave (RELEASED)
      // ---
      await().atMost(Duration.ofSeconds(30)).until(() -> printed.size() >= 2);
      view.close();
    }
    System.out.println(now);
    printed.forEach(System.out::println);
    assertThat(now).extracting(GroupMember::memberId).containsExactly("node-1");
    assertThat(printed).hasSize(2);
    assertThat(printed.get(0)).startsWith("joined node-1 slot ").contains(" token 1 since ").endsWith(" {address=10.0.0.7:8080}");
    assertThat(printed.get(1)).isEqualTo("left node-1 RELEASED");
  }
}
