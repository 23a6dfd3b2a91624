package io.leasehold.testkit;

import io.leasehold.LeaseLost;
import io.leasehold.Ticker;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/** An {@link io.leasehold.Lease#onLost} handler that records each call and when it came. */
public final class LossRecorder implements Consumer<LeaseLost> {

  /**
   * One call.
   *
   * @param reason what the handler was given
   * @param atNanos the ticker reading when it was called
   */
  public record Loss(LeaseLost reason, long atNanos) {}

  private final Ticker ticker;
  private final List<Loss> losses = new CopyOnWriteArrayList<>();

  /**
   * Makes a recorder.
   *
   * @param ticker the clock to stamp calls with
   */
  public LossRecorder(Ticker ticker) {
    this.ticker = ticker;
  }

  @Override
  public void accept(LeaseLost reason) {
    losses.add(new Loss(reason, ticker.read()));
  }

  /** {@return how many times the handler was called} */
  public int count() {
    return losses.size();
  }

  /** {@return the first call; fails if there was none} */
  public Loss first() {
    if (losses.isEmpty()) {
      throw new AssertionError("onLost was never called");
    }
    return losses.get(0);
  }
}
