package io.leasehold.bench;

import java.util.concurrent.ThreadLocalRandom;

/** Short random ids that keep the lease names of one run apart from every other run's. */
final class RunIds {

  private RunIds() {}

  static String next() {
    return Long.toString(ThreadLocalRandom.current().nextLong(1L << 40, 1L << 41), 36);
  }
}
