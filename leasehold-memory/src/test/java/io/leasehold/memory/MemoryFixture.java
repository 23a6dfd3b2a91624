package io.leasehold.memory;

import io.leasehold.LeaseBackend;
import io.leasehold.spi.VirtualClock;
import io.leasehold.testkit.Contender;
import io.leasehold.testkit.ContractFixture;
import io.leasehold.testkit.TimeControl;
import java.time.Duration;

/** The contract suite's fixture for the memory backend, on virtual or real time. */
final class MemoryFixture implements ContractFixture {

  /**
   * Virtual time starts 20 s before the ticker overflows, so every test crosses the wrap-around
   * and proves that deadlines are compared by subtraction.
   */
  static final long VIRTUAL_ORIGIN = Long.MAX_VALUE - Duration.ofSeconds(20).toNanos();

  private final MemoryStore store;
  private final TimeControl time;
  private final Duration ttl;

  private MemoryFixture(MemoryStore store, TimeControl time, Duration ttl) {
    this.store = store;
    this.time = time;
    this.ttl = ttl;
  }

  static MemoryFixture virtualTime() {
    VirtualClock clock = new VirtualClock(VIRTUAL_ORIGIN);
    return new MemoryFixture(
        MemoryStore.create(clock),
        TimeControl.virtual(clock, clock::advance, Duration.ofMillis(10)),
        Duration.ofSeconds(10));
  }

  static MemoryFixture realTime() {
    return new MemoryFixture(MemoryStore.create(), TimeControl.realTime(), Duration.ofSeconds(1));
  }

  MemoryStore store() {
    return store;
  }

  @Override
  public Contender newContender() {
    return new MemoryContender(store.connect());
  }

  @Override
  public TimeControl time() {
    return time;
  }

  @Override
  public Duration ttl() {
    return ttl;
  }

  @Override
  public void revokeInStore(String leaseName) {
    store.revoke(leaseName);
  }

  @Override
  public boolean observesLeases() {
    return true;
  }

  @Override
  public boolean attachesKeys() {
    return true;
  }

  @Override
  public void close() {}

  private static final class MemoryContender implements Contender {
    private final MemoryBackend process;
    private boolean crashed;

    MemoryContender(MemoryBackend process) {
      this.process = process;
    }

    @Override
    public LeaseBackend backend() {
      return process;
    }

    @Override
    public void cutOff() {
      process.cutOff();
    }

    @Override
    public void heal() {
      process.heal();
    }

    @Override
    public void crash() {
      crashed = true;
      process.crash();
    }

    @Override
    public void pause() {
      process.pause();
    }

    @Override
    public void resume() {
      process.resume();
    }

    @Override
    public void close() {
      if (!crashed) {
        process.heal();
        process.resume();
      }
      process.close();
    }
  }
}
