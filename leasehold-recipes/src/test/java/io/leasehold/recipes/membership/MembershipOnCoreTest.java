package io.leasehold.recipes.membership;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.LeaseBackend;
import io.leasehold.LeaseEvent;
import io.leasehold.server.LocalCluster;
import io.leasehold.testkit.SuiteSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The membership test on a real 3-node core: three members join (one in a child JVM), an
 * observer sees them with their data; the child is killed ({@code kill -9}) and is seen leaving
 * within its TTL plus one delivery.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class MembershipOnCoreTest {

  private static final Duration TTL = Duration.ofSeconds(2);

  private final List<AutoCloseable> resources = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = resources.size() - 1; i >= 0; i--) {
      resources.get(i).close();
    }
  }

  private <T extends AutoCloseable> T closeLater(T resource) {
    resources.add(resource);
    return resource;
  }

  private Member join(LeaseBackend backend, String id) {
    return closeLater(
        await("member " + id + " joins")
            .atMost(Duration.ofSeconds(30))
            .ignoreExceptions() // a first call on a loaded machine may time out
            .until(
                () -> Membership.join(backend, "workers", id)
                    .data(Map.of("address", id + ":8080"))
                    .maxMembers(8)
                    .settings(b -> SuiteSettings.forTtl(b.build().name(), id, TTL))
                    .join()
                    .get(20, TimeUnit.SECONDS),
                m -> m != null));
  }

  @Test
  void threeMembersJoinAndOneKilledIsSeenLeavingWithinItsTtl() throws Exception {
    LocalCluster cluster =
        closeLater(
            LocalCluster.start(3, 0, Files.createTempDirectory(Path.of("target"), "members-"),
                c -> c.withElectionTimeout(Duration.ofMillis(150))));
    LeaseBackend backend = closeLater(LeaseBackend.open(cluster.uri()));
    List<String> left = new CopyOnWriteArrayList<>();
    GroupView view =
        closeLater(
            GroupView.builder(backend, "workers")
                .maxMembers(8)
                .listener(
                    new GroupListener() {
                      @Override
                      public void left(GroupMember m, LeaseEvent.Type why) {
                        left.add(m.memberId() + " " + why);
                      }
                    })
                .start());

    join(backend, "a");
    join(closeLater(LeaseBackend.open(cluster.uri())), "b");
    MemberProcess child = closeLater(MemberProcess.start(cluster.uri(), "workers", "killed", TTL));
    await("the observer sees three members with their data")
        .atMost(Duration.ofSeconds(60))
        .failFast("the member JVM exited", () -> !child.isAlive())
        .until(
            () -> view.members().stream().map(m -> m.memberId() + " " + m.data()).toList(),
            members -> members.size() == 3 && members.contains("killed {address=killed:8080}"));
    assertThat(view.members()).extracting(m -> m.data().get("address"))
        .containsExactlyInAnyOrder("a:8080", "b:8080", "killed:8080");

    child.close(); // kill -9
    // Within the TTL plus one delivery; the bound is generous for a loaded machine.
    await("the killed member is seen leaving")
        .atMost(TTL.multipliedBy(10))
        .until(() -> left.contains("killed EXPIRED"));
    assertThat(view.members()).extracting(GroupMember::memberId).containsExactlyInAnyOrder("a", "b");
    assertThat(left).containsExactly("killed EXPIRED");
  }
}
