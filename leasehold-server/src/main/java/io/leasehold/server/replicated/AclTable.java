package io.leasehold.server.replicated;

import io.leasehold.core.proto.AclEntry;
import io.leasehold.core.proto.AclRight;
import io.leasehold.core.proto.AclRights;
import io.leasehold.server.Limits;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * The access control list as one immutable value: the root identity (empty: access control off)
 * and the entries, indexed per identity and right for the edge's checks. Replaced as a whole
 * when the ACL changes (rarely), so checks read it without a lock and allocate nothing.
 * Identities are in their stored form (empty for anonymous).
 */
public final class AclTable {

  static final AclTable OFF = new AclTable("", List.of());

  /** Why an ACL change or listing is refused where access control was never turned on. */
  public static final String ACCESS_CONTROL_OFF = "access control is off: this cluster was bootstrapped without --root-identity";

  /** Entries in identity, right, prefix order: how they are listed and written to snapshots. */
  static final Comparator<AclEntry> ORDER =
      Comparator.comparing(AclEntry::getIdentity)
          .thenComparingInt(AclEntry::getRightValue)
          .thenComparing(AclEntry::getPrefix);

  private static final String[] NONE = new String[0];

  private final String root;
  private final List<AclEntry> entries;
  /** Identity → prefixes indexed by the right's number. */
  private final Map<String, String[][]> byIdentity;

  private AclTable(String root, List<AclEntry> sorted) {
    this.root = root;
    this.entries = Collections.unmodifiableList(sorted);
    Map<String, List<List<String>>> building = new HashMap<>();
    int rights = AclRight.ACL_RIGHT_ADMIN.getNumber() + 1;
    for (AclEntry e : sorted) {
      List<List<String>> perRight =
          building.computeIfAbsent(
              e.getIdentity(),
              i -> {
                List<List<String>> l = new ArrayList<>();
                for (int r = 0; r < rights; r++) {
                  l.add(new ArrayList<>());
                }
                return l;
              });
      perRight.get(e.getRightValue()).add(e.getPrefix());
    }
    Map<String, String[][]> index = new HashMap<>();
    building.forEach(
        (identity, perRight) -> {
          String[][] prefixes = new String[rights][];
          for (int r = 0; r < rights; r++) {
            prefixes[r] = perRight.get(r).isEmpty() ? NONE : perRight.get(r).toArray(String[]::new);
          }
          index.put(identity, prefixes);
        });
    this.byIdentity = index;
  }

  /** {@return a table with this root and these entries (any order)} */
  static AclTable of(String root, List<AclEntry> entries) {
    TreeSet<AclEntry> sorted = new TreeSet<>(ORDER);
    sorted.addAll(entries);
    return new AclTable(root, new ArrayList<>(sorted));
  }

  /** {@return whether access control is on} */
  public boolean enabled() {
    return !root.isEmpty();
  }

  /** {@return the root identity; empty while access control is off} */
  String root() {
    return root;
  }

  /** {@return the entries in identity, right, prefix order} */
  List<AclEntry> entries() {
    return entries;
  }

  boolean contains(AclEntry entry) {
    return Collections.binarySearch(entries, entry, ORDER) >= 0;
  }

  /** {@return a table with the entry added} */
  AclTable with(AclEntry entry) {
    List<AclEntry> more = new ArrayList<>(entries);
    more.add(entry);
    return of(root, more);
  }

  /** {@return a table without the entry} */
  AclTable without(AclEntry entry) {
    List<AclEntry> fewer = new ArrayList<>(entries);
    fewer.removeIf(e -> ORDER.compare(e, entry) == 0);
    return new AclTable(root, fewer);
  }

  /** {@return whether {@code identity} may use {@code right} on the whole of {@code key}} */
  public boolean allows(String identity, AclRight right, String key) {
    return allows(identity, right, key, 0, key.length());
  }

  /**
   * {@return whether {@code identity} may use {@code right} on {@code key}'s characters from
   * {@code from} (a lease's name inside a reserved key), whose name part ends at {@code nameEnd}:
   * an entry's prefix must start that part and lie within it} Allocates nothing.
   */
  public boolean allows(String identity, AclRight right, String key, int from, int nameEnd) {
    if (root.isEmpty() || root.equals(identity)) {
      return true;
    }
    String[][] rights = byIdentity.get(identity);
    if (rights == null) {
      return false;
    }
    for (String prefix : rights[right.getNumber()]) {
      if (prefix.length() <= nameEnd - from && key.startsWith(prefix, from)) {
        return true;
      }
    }
    return false;
  }

  /** {@return whether {@code identity} holds any right (root holds all)} */
  public boolean hasAnyRight(String identity) {
    return root.isEmpty() || root.equals(identity) || byIdentity.containsKey(identity);
  }

  /**
   * {@return why an ACL entry (identity in stored form) is malformed, naming the field; null when
   * it is fine} The edge refuses such an entry; the log and snapshot loading refuse it again.
   */
  public static String entryProblem(AclEntry entry) {
    if (!AclRights.ALL.contains(entry.getRight())) {
      return "right must be one of " + AclRights.WORDS + "; was " + entry.getRightValue();
    }
    if (entry.getRight() == AclRight.ACL_RIGHT_ADMIN && !entry.getPrefix().isEmpty()) {
      return "prefix must be empty for the right admin (it is not per prefix); was \"" + entry.getPrefix() + "\"";
    }
    if (entry.getPrefix().length() > Limits.MOST_KEY_BYTES) {
      return "prefix must be at most " + Limits.MOST_KEY_BYTES + " characters; was " + entry.getPrefix().length();
    }
    return null;
  }
}
