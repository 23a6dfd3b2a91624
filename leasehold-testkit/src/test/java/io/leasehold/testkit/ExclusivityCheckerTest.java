package io.leasehold.testkit;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.HolderId;
import io.leasehold.Lease;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseSettings;
import io.leasehold.Subscription;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
class ExclusivityCheckerTest {

  /** A lease whose token the test sets: present means live. */
  private static final class Scripted implements Lease {
    private final LeaseSettings settings;
    private final HolderId holder;
    private OptionalLong token = OptionalLong.empty();

    Scripted(String owner) {
      settings = LeaseSettings.builder("jobs", owner).build();
      holder = HolderId.newIncarnation(owner);
    }

    Scripted live(long t) {
      token = OptionalLong.of(t);
      return this;
    }

    Scripted dead() {
      token = OptionalLong.empty();
      return this;
    }

    @Override
    public String name() {
      return settings.name();
    }

    @Override
    public String owner() {
      return settings.owner();
    }

    @Override
    public HolderId holder() {
      return holder;
    }

    @Override
    public LeaseSettings settings() {
      return settings;
    }

    @Override
    public CompletableFuture<Boolean> acquire() {
      throw new UnsupportedOperationException();
    }

    @Override
    public CompletableFuture<Void> release() {
      throw new UnsupportedOperationException();
    }

    @Override
    public boolean checkAlive() {
      return token.isPresent();
    }

    @Override
    public Duration remaining() {
      return Duration.ZERO;
    }

    @Override
    public OptionalLong fencingToken() {
      return token;
    }

    @Override
    public Subscription onLost(Consumer<LeaseLost> handler) {
      return () -> {};
    }

    @Override
    public void close() {}
  }

  private final ExclusivityChecker checker = new ExclusivityChecker();
  private final Scripted a = new Scripted("a");
  private final Scripted b = new Scripted("b");

  @Test
  void aHandOverInOrderPasses() {
    checker.sample(a.live(1));
    checker.sample(b);
    checker.sample(a.dead());
    checker.sample(b.live(2));
    checker.sample(a);

    assertThatCode(checker::assertExclusive).doesNotThrowAnyException();
  }

  @Test
  void theOlderHolderSeenLiveAfterTheNewerOneIsAnOverlap() {
    checker.sample(a.live(1));
    checker.sample(b.live(2));
    checker.sample(a);

    assertThatThrownBy(checker::assertExclusive)
        .hasMessageContaining("token 1")
        .hasMessageContaining("still live after the later token 2");
  }

  @Test
  void aTokenThatDoesNotGrowIsCaughtToo() {
    checker.sample(a.live(5));
    checker.sample(a.dead());
    checker.sample(b.live(4));

    assertThatThrownBy(checker::assertExclusive).hasMessageContaining("still live after");
  }

  @Test
  void oneTokenForTwoHoldersIsCaught() {
    checker.sample(a.live(3));
    checker.sample(b.live(3));

    assertThatThrownBy(checker::assertExclusive).hasMessageContaining("was live for two holders");
  }
}
