package com.example.worker;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * A job that must run in one place at a time — here two workers of one process stand for two
 * replicas of a service — writing to a resource that checks fencing tokens.
 *
 * <p>It shows the three things a holder of a lease does: it works only while {@link
 * Lease#checkAlive()} says yes, it stops the moment {@link Lease#onLost} says the lease is gone,
 * and it passes its fencing token with every write, so that the resource can refuse a holder that
 * woke up too late (a long GC pause, a stopped VM) instead of trusting it.
 *
 * <p>Usage: {@code SingletonWorker [BACKEND-URI] [SECONDS]}: {@code memory:} (the default) runs
 * in this process; {@code leasehold://127.0.0.1:7000,127.0.0.1:7002,127.0.0.1:7004} is the
 * cluster {@code ./leasehold dev} starts. Exit status 0 when every step behaved as a lease
 * promises, 1 when one did not.
 */
public final class SingletonWorker {

  public static void main(String[] args) throws Exception {
    String uri = args.length > 0 ? args[0] : "memory:";
    Duration runFor = Duration.ofSeconds(args.length > 1 ? Long.parseLong(args[1]) : 4);
    FencedLedger ledger = new FencedLedger();
    ExecutorService threads = Executors.newCachedThreadPool();
    List<String> problems = new ArrayList<>();
    try (LeaseBackend backend = LeaseBackend.open(uri);
        Lease a = backend.newLease(settings("worker-a"));
        Lease b = backend.newLease(settings("worker-b"))) {
      Worker first = new Worker(a, ledger, threads);
      Worker second = new Worker(b, ledger, threads);

      check(first.tryStart(), "worker-a acquires the free lease", problems);
      check(!second.tryStart(), "worker-b is refused while worker-a holds it", problems);
      Thread.sleep(runFor.toMillis() / 2);

      long oldToken = first.token;
      first.stopAndRelease(); // a planned hand-over: a deploy, a scale-down
      check(second.tryStart(), "worker-b acquires once worker-a released", problems);
      check(second.token > oldToken, "worker-b's fencing token " + second.token + " is above worker-a's " + oldToken, problems);
      Thread.sleep(runFor.toMillis() / 2);

      // worker-a, had it been paused in the middle of a write, would wake up holding its old
      // token. Its write reaches the ledger after worker-b's: the ledger refuses it.
      check(!ledger.write(oldToken, "a late write of worker-a"), "the ledger refuses worker-a's late write (token " + oldToken + ")",
          problems);
      second.stopAndRelease();
      System.out.printf("the ledger took %d writes, the last with token %d%n", ledger.writes(), ledger.highestToken());
    } finally {
      threads.shutdownNow();
    }
    if (!problems.isEmpty()) {
      System.out.println("FAILED: " + String.join("; ", problems));
      System.exit(1);
    }
    System.out.println("every step behaved as a lease promises");
  }

  private static LeaseSettings settings(String owner) {
    return LeaseSettings.builder("example/singleton-worker", owner).ttl(Duration.ofSeconds(10)).build();
  }

  private static void check(boolean ok, String what, List<String> problems) {
    System.out.println((ok ? "ok:     " : "NOT OK: ") + what);
    if (!ok) {
      problems.add(what);
    }
  }

  /** One replica's worker: it works only while it holds the lease. */
  static final class Worker {
    private final Lease lease;
    private final FencedLedger ledger;
    private final ExecutorService threads;
    private volatile Future<?> work;
    long token;

    Worker(Lease lease, FencedLedger ledger, ExecutorService threads) {
      this.lease = lease;
      this.ledger = ledger;
      this.threads = threads;
      // Lost (taken over, expired, revoked): stop at once and wait for nothing. This runs before
      // the store can hand the lease to anyone else.
      lease.onLost(lost -> {
        System.out.println(lease.owner() + " lost the lease (" + lost.kind() + "): stopping");
        cancel();
      });
    }

    /** {@return whether it got the lease and started working} */
    boolean tryStart() throws Exception {
      if (!lease.acquire().get(30, TimeUnit.SECONDS)) {
        return false; // someone else holds it
      }
      token = lease.fencingToken().orElseThrow();
      long mine = token;
      work = threads.submit(() -> {
        int batch = 0;
        while (lease.checkAlive() && !Thread.currentThread().isInterrupted()) {
          ledger.write(mine, lease.owner() + " batch " + batch++); // every write carries the token
          try {
            Thread.sleep(100); // the rest of a batch's work
          } catch (InterruptedException stopped) {
            return;
          }
        }
      });
      return true;
    }

    void stopAndRelease() throws Exception {
      cancel();
      lease.release().get(30, TimeUnit.SECONDS);
    }

    private void cancel() {
      Future<?> running = work;
      if (running != null) {
        running.cancel(true);
      }
    }
  }

  /**
   * Stands for the resource the job writes to — a database table, an object store, a queue. It
   * remembers the highest fencing token it has seen and refuses a write with a lower one: the
   * lease keeps two holders apart in time, the token keeps a late one out of the data.
   * (In SQL: {@code UPDATE ... SET ..., token = ? WHERE id = ? AND token <= ?}.)
   */
  static final class FencedLedger {
    private long highestToken;
    private int writes;

    synchronized boolean write(long token, String entry) {
      if (token < highestToken) {
        return false;
      }
      highestToken = token;
      writes++;
      return true;
    }

    synchronized int writes() {
      return writes;
    }

    synchronized long highestToken() {
      return highestToken;
    }
  }
}
