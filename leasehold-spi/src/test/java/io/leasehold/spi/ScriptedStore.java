package io.leasehold.spi;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A store whose every answer the test gives by hand, so that a test can put replies in any order
 * and at any time the engine must survive. It records each call.
 */
final class ScriptedStore implements LeaseStore {

  record Acquire(AcquireRequest request, CompletableFuture<AcquireResult> reply) {}

  /** A renewal; {@code confirm} when the engine asked through {@link LeaseStore#confirm}. */
  record Renew(Tenure tenure, long sentAtNanos, CompletableFuture<RenewResult> reply, boolean confirm) {}

  record Release(Tenure tenure, CompletableFuture<Void> reply) {}

  final List<Acquire> acquires = new CopyOnWriteArrayList<>();
  final List<Renew> renewals = new CopyOnWriteArrayList<>();
  final List<Release> releases = new CopyOnWriteArrayList<>();
  final List<AcquireRequest> abandoned = new CopyOnWriteArrayList<>();

  @Override
  public CompletableFuture<AcquireResult> acquire(AcquireRequest request) {
    Acquire call = new Acquire(request, new CompletableFuture<>());
    acquires.add(call);
    return call.reply;
  }

  @Override
  public CompletableFuture<RenewResult> renew(Tenure tenure, long sentAtNanos) {
    Renew call = new Renew(tenure, sentAtNanos, new CompletableFuture<>(), false);
    renewals.add(call);
    return call.reply;
  }

  @Override
  public CompletableFuture<RenewResult> confirm(Tenure tenure, long sentAtNanos) {
    Renew call = new Renew(tenure, sentAtNanos, new CompletableFuture<>(), true);
    renewals.add(call);
    return call.reply;
  }

  @Override
  public CompletableFuture<Void> release(Tenure tenure) {
    Release call = new Release(tenure, new CompletableFuture<>());
    releases.add(call);
    return call.reply;
  }

  @Override
  public CompletableFuture<Void> abandon(AcquireRequest request) {
    abandoned.add(request);
    return CompletableFuture.completedFuture(null);
  }

  Acquire lastAcquire() {
    assertThat(acquires).as("acquire calls").isNotEmpty();
    return acquires.get(acquires.size() - 1);
  }

  Renew lastRenewal() {
    assertThat(renewals).as("renewal calls").isNotEmpty();
    return renewals.get(renewals.size() - 1);
  }

  /** Grants the last acquire with {@code token}, counting the TTL from the request's send time. */
  void grant(long token) {
    grant(lastAcquire(), token);
  }

  /** Grants {@code call} with {@code token}, counting the TTL from the request's send time. */
  static void grant(Acquire call, long token) {
    call.reply.complete(new AcquireResult.Acquired(token, call.request.sentAtNanos()));
  }
}
