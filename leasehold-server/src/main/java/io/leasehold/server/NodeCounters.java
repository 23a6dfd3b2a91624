package io.leasehold.server;

import java.util.concurrent.atomic.LongAdder;

/**
 * Counters of one node's client traffic, for its metrics. Adders: an increment neither locks nor
 * allocates, so the calls that count stay as fast as they were.
 */
public final class NodeCounters {
  public final LongAdder keepAlives = new LongAdder();
  public final LongAdder writes = new LongAdder();
  public final LongAdder writeNanos = new LongAdder();
  final LongAdder leaderships = new LongAdder();
}
