package io.leasehold.bench;

import io.leasehold.LeaseException;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.LongAdder;

/** Failed operations counted by kind, from any thread. */
final class ErrorCounts {

  private final Map<String, LongAdder> counts = new ConcurrentHashMap<>();

  /** Counts one failure of {@code operation} with {@code error}. */
  void record(String operation, Throwable error) {
    record(operation + ": " + kind(error));
  }

  /** Counts one failure named {@code what}. */
  void record(String what) {
    counts.computeIfAbsent(what, k -> new LongAdder()).increment();
  }

  /** {@return the total count} */
  long total() {
    return counts.values().stream().mapToLong(LongAdder::sum).sum();
  }

  /** {@return the counts by kind, sorted by name} */
  Map<String, Long> byKind() {
    Map<String, Long> out = new TreeMap<>();
    counts.forEach((k, v) -> out.put(k, v.sum()));
    return out;
  }

  /**
   * {@return a short name for what went wrong: the exception's class, and for a {@link
   * LeaseException} its code}
   */
  static String kind(Throwable error) {
    Throwable t = error;
    while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
      t = t.getCause();
    }
    if (t instanceof LeaseException le) {
      return t.getClass().getSimpleName() + " (" + le.code() + ")";
    }
    return t.getClass().getSimpleName();
  }
}
