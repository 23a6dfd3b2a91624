package io.leasehold.testkit;

import io.leasehold.HolderId;
import io.leasehold.Lease;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Checks, from samples taken while leases run in this JVM, that no two holders ever believed they
 * held the same lease at the same moment.
 *
 * <p>Each {@link #sample(Lease)} takes a number from a shared counter, asks the lease for its
 * fencing token (present exactly while {@link Lease#checkAlive()} is true), and takes another
 * number: if the token is present, the holder was live at some instant between the two. The
 * counter orders those instants as they really happened, whatever clock the leases run on
 * (virtual time included). If tenures never overlap and tokens grow from one tenure to the next,
 * then for tokens {@code j < k} every live sample of {@code j} began before every live sample of
 * {@code k} ended. {@link #assertExclusive()} checks exactly that, and that no token belongs to
 * two holders.
 */
public final class ExclusivityChecker {

  private final AtomicLong order = new AtomicLong();
  private final ConcurrentLinkedQueue<Sample> samples = new ConcurrentLinkedQueue<>();

  /** Makes a checker with no samples. */
  public ExclusivityChecker() {}

  /**
   * Samples one lease now; thread-safe.
   *
   * @param lease the lease
   * @return whether the lease was live
   */
  public boolean sample(Lease lease) {
    long before = order.incrementAndGet();
    OptionalLong token = lease.fencingToken();
    long after = order.incrementAndGet();
    if (token.isPresent()) {
      samples.add(new Sample(lease.name(), lease.holder(), token.getAsLong(), before, after));
      return true;
    }
    return false;
  }

  /** {@return how many live samples were taken} */
  public int liveSamples() {
    return samples.size();
  }

  /**
   * Fails if two holders were live at once for one lease name, or a token had two holders.
   *
   * @throws AssertionError naming the first violation found
   */
  public void assertExclusive() {
    Map<String, TreeMap<Long, Span>> byName = new HashMap<>();
    for (Sample s : samples) {
      Span span =
          byName
              .computeIfAbsent(s.name, n -> new TreeMap<>())
              .computeIfAbsent(s.token, t -> new Span(s.holder));
      if (!span.holder.equals(s.holder)) {
        throw new AssertionError(
            "lease '" + s.name + "': token " + s.token + " was live for two holders, "
                + span.holder + " and " + s.holder);
      }
      span.latestStart = Math.max(span.latestStart, s.before);
      span.earliestEnd = Math.min(span.earliestEnd, s.after);
    }
    for (Map.Entry<String, TreeMap<Long, Span>> lease : byName.entrySet()) {
      long latestStartSoFar = 0;
      long tokenOfLatest = 0;
      HolderId holderOfLatest = null;
      for (Map.Entry<Long, Span> e : lease.getValue().entrySet()) {
        Span span = e.getValue();
        if (holderOfLatest != null && span.earliestEnd <= latestStartSoFar) {
          throw new AssertionError(
              "lease '" + lease.getKey() + "': token " + tokenOfLatest + " (" + holderOfLatest
                  + ") was still live after the later token " + e.getKey() + " ("
                  + span.holder + ") was live: two holders at once, or a token that did not grow");
        }
        if (span.latestStart > latestStartSoFar) {
          latestStartSoFar = span.latestStart;
          tokenOfLatest = e.getKey();
          holderOfLatest = span.holder;
        }
      }
    }
  }

  /** {@return the live samples in the order they were taken, for a failure report} */
  public List<String> describe() {
    List<Sample> sorted = new ArrayList<>(samples);
    sorted.sort(Comparator.comparingLong(Sample::before));
    List<String> lines = new ArrayList<>();
    for (Sample s : sorted) {
      lines.add(s.before + ": " + s.name + " token " + s.token + " held by " + s.holder);
    }
    return lines;
  }

  private record Sample(String name, HolderId holder, long token, long before, long after) {}

  private static final class Span {
    final HolderId holder;
    long latestStart = Long.MIN_VALUE;
    long earliestEnd = Long.MAX_VALUE;

    Span(HolderId holder) {
      this.holder = holder;
    }
  }
}
