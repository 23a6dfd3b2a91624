package io.leasehold.memory;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.HolderId;
import io.leasehold.LeaseLost;
import io.leasehold.spi.AcquireRequest;
import io.leasehold.spi.AcquireResult;
import io.leasehold.spi.OpenLeases;
import io.leasehold.spi.RenewResult;
import io.leasehold.spi.Tenure;
import io.leasehold.spi.VirtualClock;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The store's side of the contract, request by request, as every backend's store must answer. */
@Timeout(30)
class MemoryStoreTest {

  private static final Duration TTL = Duration.ofSeconds(10);

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000_000L);
  private final MemoryStore store = MemoryStore.create(clock);
  private final MemoryLeaseStore link = new MemoryLeaseStore(store, new OpenLeases("test"), clock);
  private final HolderId a = HolderId.newIncarnation("a");
  private final HolderId b = HolderId.newIncarnation("b");

  private AcquireResult acquire(String name, HolderId holder, long requestId) {
    return store.acquire(new AcquireRequest(name, holder, requestId, TTL, clock.read()), link);
  }

  private long token(AcquireResult result) {
    assertThat(result).isInstanceOf(AcquireResult.Acquired.class);
    return ((AcquireResult.Acquired) result).token();
  }

  private Tenure tenure(String name, HolderId holder, long requestId, long token) {
    return new Tenure(name, holder, requestId, token, TTL);
  }

  @Test
  void tokensGrowAcrossAllNames() {
    long first = token(acquire("x", a, 1));
    long second = token(acquire("y", a, 1));
    long third = token(acquire("x2", b, 1));

    assertThat(second).isGreaterThan(first);
    assertThat(third).isGreaterThan(second);
  }

  @Test
  void anotherHolderIsToldWhoHoldsTheLease() {
    acquire("x", a, 1);

    assertThat(acquire("x", b, 1)).isEqualTo(new AcquireResult.HeldElsewhere(a.toString()));
  }

  @Test
  void aRetryOfTheSameRequestGetsTheSameTenureAndRenewsIt() {
    long token = token(acquire("x", a, 7));
    clock.advance(Duration.ofSeconds(6));

    assertThat(token(acquire("x", a, 7))).isEqualTo(token);
    clock.advance(Duration.ofSeconds(6)); // 12 s after the first grant, 6 s after the retry
    assertThat(store.lookup("x")).hasValueSatisfying(l -> assertThat(l.token()).isEqualTo(token));
  }

  @Test
  void aNewRequestOfTheSameHolderReplacesItsOldTenureWithAGreaterToken() {
    long old = token(acquire("x", a, 1));

    long renewed = token(acquire("x", a, 2));

    assertThat(renewed).isGreaterThan(old);
    assertThat(store.renew(tenure("x", a, 1, old), clock.read()))
        .isInstanceOfSatisfying(
            RenewResult.Lost.class,
            lost -> assertThat(lost.reason().kind()).isEqualTo(LeaseLost.Kind.REVOKED));
  }

  @Test
  void aLateCopyOfAnOlderRequestChangesNothing() {
    token(acquire("x", a, 1));
    long current = token(acquire("x", a, 2));

    assertThat(acquire("x", a, 1)).isInstanceOf(AcquireResult.HeldElsewhere.class);
    assertThat(store.lookup("x")).hasValueSatisfying(l -> assertThat(l.token()).isEqualTo(current));
  }

  @Test
  void recordsOfVanishedHoldersDoNotPileUp() {
    for (int i = 0; i < 1_000; i++) {
      acquire("crashed-" + i, a, 1); // never renewed, never touched again
    }
    clock.advance(TTL);

    for (int i = 0; i < 1_000; i++) {
      store.lookup("other");
    }

    assertThat(store.recordCount()).isZero();
  }

  @Test
  void expiryIsMeasuredFromTheLastRenewalTheStoreReceived() {
    long token = token(acquire("x", a, 1));
    clock.advance(Duration.ofSeconds(9));
    assertThat(store.renew(tenure("x", a, 1, token), clock.read()))
        .isInstanceOf(RenewResult.Renewed.class);

    clock.advance(TTL.minusNanos(1));
    assertThat(store.lookup("x")).isPresent();
    assertThat(acquire("x", b, 1)).isInstanceOf(AcquireResult.HeldElsewhere.class);
    clock.advance(Duration.ofNanos(1));
    assertThat(store.lookup("x")).isEmpty();
    assertThat(token(acquire("x", b, 1))).isGreaterThan(token);
  }

  @Test
  void renewalsOfAnEndedTenureSayWhy() {
    long token = token(acquire("x", a, 1));
    clock.advance(TTL);
    long tokenOfB = token(acquire("x", b, 1));

    RenewResult taken = store.renew(tenure("x", a, 1, token), clock.read());
    assertThat(taken).isInstanceOf(RenewResult.Lost.class);
    assertThat(((RenewResult.Lost) taken).reason().kind()).isEqualTo(LeaseLost.Kind.TAKEN_OVER);
    assertThat(((RenewResult.Lost) taken).reason().detail()).contains(b.toString());

    store.release(tenure("x", b, 1, tokenOfB));
    RenewResult gone = store.renew(tenure("x", b, 1, tokenOfB), clock.read());
    assertThat(((RenewResult.Lost) gone).reason().kind()).isEqualTo(LeaseLost.Kind.REVOKED);
  }

  @Test
  void releaseEndsOnlyTheExactTenure() {
    long token = token(acquire("x", a, 1));

    store.release(tenure("x", a, 1, token - 1));
    store.release(tenure("x", b, 1, token));
    assertThat(store.lookup("x")).isPresent();

    store.release(tenure("x", a, 1, token));
    assertThat(store.lookup("x")).isEmpty();
  }

  @Test
  void revokeDeletesWhateverIsThere() {
    acquire("x", a, 1);

    assertThat(store.revoke("x")).isTrue();
    assertThat(store.revoke("x")).isFalse();
    assertThat(store.lookup("x")).isEmpty();
  }

  @Test
  void aRevokedRecordGoesToNobodyElseUntilItsHolderReleasesThatTenure() {
    long token = token(acquire("x", a, 1));
    store.revoke("x");

    assertThat(acquire("x", b, 1)).isEqualTo(new AcquireResult.HeldElsewhere(a.toString()));
    assertThat(acquire("x", a, 1)).as("a late copy of the revoked tenure's request")
        .isEqualTo(new AcquireResult.HeldElsewhere(a.toString()));
    assertThat(store.renew(tenure("x", a, 1, token), clock.read()))
        .isInstanceOfSatisfying(RenewResult.Lost.class, l -> assertThat(l.reason().kind()).isEqualTo(LeaseLost.Kind.REVOKED));
    store.release(tenure("x", b, 1, token));
    assertThat(acquire("x", b, 2)).as("after another holder's release").isInstanceOf(AcquireResult.HeldElsewhere.class);

    store.release(tenure("x", a, 1, token));

    assertThat(token(acquire("x", b, 3))).isGreaterThan(token);
  }

  @Test
  void aRevokedRecordGoesToNobodyElseUntilItExpiresIfItsHolderNeverAnswers() {
    acquire("x", a, 1);
    clock.advance(Duration.ofSeconds(4));
    store.revoke("x");
    assertThat(store.renew(tenure("x", a, 1, 1), clock.read())).as("not renewed any more").isInstanceOf(RenewResult.Lost.class);

    clock.advance(Duration.ofSeconds(5)); // 9 s after the last renewal
    assertThat(acquire("x", b, 1)).isInstanceOf(AcquireResult.HeldElsewhere.class);
    clock.advance(Duration.ofSeconds(1)); // its TTL has passed

    assertThat(acquire("x", b, 2)).isInstanceOf(AcquireResult.Acquired.class);
  }

  @Test
  void theHolderOfARevokedRecordAskingAnewGetsANewTenure() {
    long token = token(acquire("x", a, 1));
    store.revoke("x");

    assertThat(token(acquire("x", a, 2))).isGreaterThan(token);
  }
}
