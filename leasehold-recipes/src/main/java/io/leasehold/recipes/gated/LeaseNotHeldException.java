package io.leasehold.recipes.gated;

import io.leasehold.LeaseLost;
import java.util.Optional;
import java.util.concurrent.RejectedExecutionException;

/**
 * A {@link GatedExecutor} refused a step because its lease is not held: not acquired yet, lost,
 * or the executor was closed. The step did not run.
 */
public final class LeaseNotHeldException extends RejectedExecutionException {

  private static final long serialVersionUID = 1L;

  /** The loss that stopped the executor, if a loss did. */
  private final transient LeaseLost loss;

  /**
   * Makes the exception.
   *
   * @param message what was refused and why
   * @param loss the loss that stopped the executor, or {@code null}
   */
  public LeaseNotHeldException(String message, LeaseLost loss) {
    super(message);
    this.loss = loss;
  }

  /** {@return the loss that stopped the executor, if it was a loss} */
  public Optional<LeaseLost> loss() {
    return Optional.ofNullable(loss);
  }
}
