package io.leasehold.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import io.etcd.jetcd.Lease;
import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdExceptionFactory;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.leasehold.spi.LeaseRuntime;
import io.leasehold.spi.VirtualClock;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A keep-alive answered "lease not found" once is not a loss: the fault harness saw a paused etcd
 * leader (3.4.23), 16 ms after it resumed and before it heard of the new term, answer a client's
 * keep-alive from its own lessor, which knew nothing of a lease the new leader had granted during
 * the pause — and the holder gave up a live tenure. Only a second "not found", to a keep-alive sent
 * after the first came back, ends the grant; a success in between forgets the first.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
@Tag("integration")
class SessionNotFoundTest {

  private final VirtualClock clock = new VirtualClock(1_000_000_000L);
  private final LeaseRuntime runtime = LeaseRuntime.of(clock, clock, Runnable::run);
  private final Deque<Boolean> answers = new ArrayDeque<>(); // true: alive, false: not found
  private final List<String> deaths = new ArrayList<>();

  private final Lease etcd =
      (Lease)
          Proxy.newProxyInstance(
              Lease.class.getClassLoader(),
              new Class<?>[] {Lease.class},
              (proxy, method, args) ->
                  switch (method.getName()) {
                    case "grant" -> CompletableFuture.completedFuture(
                        new LeaseGrantResponse(
                            io.etcd.jetcd.api.LeaseGrantResponse.newBuilder().setID(42).setTTL(2).build()));
                    case "keepAliveOnce" -> answers.removeFirst()
                        ? CompletableFuture.completedFuture(
                            new LeaseKeepAliveResponse(
                                io.etcd.jetcd.api.LeaseKeepAliveResponse.newBuilder().setID(42).setTTL(2).build()))
                        : CompletableFuture.failedFuture(
                            EtcdExceptionFactory.newEtcdException(ErrorCode.NOT_FOUND, "etcdserver: requested lease not found"));
                    case "revoke" -> CompletableFuture.completedFuture(null);
                    case "toString" -> "scripted etcd lease client";
                    default -> throw new UnsupportedOperationException(method.getName());
                  });

  private final Session session =
      new Session(2, Duration.ofMillis(666), Duration.ofMillis(500), etcd, runtime, (g, reason) -> deaths.add(reason));

  private Session.Grant grant() {
    return session.grant(TimeUnit.SECONDS.toNanos(1)).join();
  }

  private boolean keepAlive(Session.Grant g, boolean alive) {
    answers.add(alive);
    clock.advance(Duration.ofMillis(10));
    return !session.nextKeepAlive(g).isCompletedExceptionally();
  }

  @Test
  void oneNotFoundBetweenSuccessesEndsNothing() {
    Session.Grant g = grant();
    long lastOk = g.lastOkSentAt;

    assertThat(keepAlive(g, false)).as("the stale member's answer fails this keep-alive").isFalse();
    assertThat(deaths).as("but ends nothing").isEmpty();
    assertThat(g.dead).isNull();
    assertThat(g.lastOkSentAt).as("and extends nothing").isEqualTo(lastOk);

    assertThat(keepAlive(g, true)).as("asked again, the cluster answers").isTrue();
    assertThat(keepAlive(g, false)).as("a later single not-found is again only a failure").isFalse();
    assertThat(deaths).isEmpty();
  }

  @Test
  void twoNotFoundsInARowEndTheGrant() {
    Session.Grant g = grant();

    keepAlive(g, false);
    assertThat(deaths).isEmpty();
    keepAlive(g, false);

    assertThat(deaths).hasSize(1);
    assertThat(deaths.get(0)).contains("etcd lease 2a (TTL 2 s) no longer exists in etcd");
    assertThat(g.dead).isNotNull();
  }
}
