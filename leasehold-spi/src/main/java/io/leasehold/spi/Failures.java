package io.leasehold.spi;

import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * For backends: what a failed future really failed with. {@link java.util.concurrent.CompletableFuture}
 * wraps a failure in {@link CompletionException} (and {@code get()} in {@link
 * ExecutionException}), sometimes more than once along a chain; decisions and messages need the
 * failure underneath.
 */
public final class Failures {

  private Failures() {}

  /**
   * {@return the failure under every {@link CompletionException} and {@link ExecutionException}
   * wrapper, or {@code error} itself if it is not wrapped}
   *
   * @param error a failure, as a future's handler receives it
   */
  public static Throwable unwrap(Throwable error) {
    Throwable e = error;
    while ((e instanceof CompletionException || e instanceof ExecutionException)
        && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  /**
   * {@return the unwrapped failure's message, or its class's simple name where it has none}
   *
   * @param error a failure, as a future's handler receives it
   */
  public static String rootMessage(Throwable error) {
    Throwable e = unwrap(error);
    return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
  }
}
