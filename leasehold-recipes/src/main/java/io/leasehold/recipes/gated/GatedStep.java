package io.leasehold.recipes.gated;

/**
 * One irreversible step that a {@link GatedExecutor} runs only while its lease is held: a shard
 * allocation, a payment, a message sent.
 *
 * @param <T> what the step produces
 */
@FunctionalInterface
public interface GatedStep<T> {

  /**
   * Runs the step.
   *
   * @param fencingToken the token of the tenure that admitted the step; pass it to the resource
   * @return the step's result
   * @throws Exception whatever the step throws; it fails the step's future
   */
  T run(long fencingToken) throws Exception;
}
