package io.leasehold.zookeeper;

import io.leasehold.HolderId;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * Where leases live in ZooKeeper, and what their znodes hold.
 *
 * <ul>
 *   <li>{@code /leasehold/leases/<encoded name>}: a persistent <em>lease node</em>, one per lease
 *       name ever used. Its data is the {@link TenureRecord} of the current tenure, or the lease
 *       name once that tenure was released; its data version changes with every new tenure and
 *       every release, because each rewrites it in the same transaction that creates or deletes
 *       the holder node.</li>
 *   <li>{@code /leasehold/leases/<encoded name>/holder}: the ephemeral <em>holder node</em> of the
 *       current tenure, owned by the holder's session. Its czxid is the fencing token.</li>
 *   <li>{@code /leasehold/sessions/<session id, 16 hex digits>}: an ephemeral <em>session
 *       node</em> per session that holds leases, made before its first tenure. It exists exactly
 *       as long as the session (unless someone deletes it), so a contender can tell a tenure whose
 *       session ended from one whose holder node alone was deleted.</li>
 * </ul>
 */
final class ZNodes {

  static final String ROOT = "/leasehold";
  static final String LEASES = ROOT + "/leases";
  static final String SESSIONS = ROOT + "/sessions";
  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  private ZNodes() {}

  /**
   * Encodes a lease name as one znode name, collision-free: ASCII letters, digits, {@code -} and
   * {@code _} stand for themselves; every other character is percent-encoded as its UTF-8 bytes
   * ({@code %2E} for a dot, {@code %25} for a percent sign). Distinct names give distinct znode
   * names, and none is {@code .}, {@code ..} or contains {@code /}.
   */
  static String encode(String leaseName) {
    StringBuilder out = new StringBuilder(leaseName.length() + 8);
    for (byte b : leaseName.getBytes(StandardCharsets.UTF_8)) {
      int c = b & 0xff;
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '-' || c == '_') {
        out.append((char) c);
      } else {
        out.append('%').append(HEX[c >> 4]).append(HEX[c & 0xf]);
      }
    }
    return out.toString();
  }

  static String leaseNode(String leaseName) {
    return LEASES + "/" + encode(leaseName);
  }

  static String holderNode(String leaseName) {
    return leaseNode(leaseName) + "/holder";
  }

  static String sessionNode(long sessionId) {
    return SESSIONS + "/" + String.format("%016x", sessionId);
  }

  /** What a lease node holds once no tenure is recorded on it: the lease name, as readable text. */
  static byte[] noTenure(String leaseName) {
    return leaseName.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * What a release writes on the lease node: the lease name (as {@link #noTenure}), then which
   * tenure was released, so that an observer that read only after the release still knows whose
   * tenure began and ended (ZooKeeper's events carry no data). No tenure is recorded, like {@link
   * #noTenure}.
   */
  static byte[] released(String leaseName, String holder, long token) {
    return (leaseName + "\nreleased=" + holder + "\ntoken=" + token + "\n")
        .getBytes(StandardCharsets.UTF_8);
  }

  /** A tenure a release recorded on the lease node ({@link #released}). */
  record Released(String holder, long token) {

    /** {@return the released tenure written by {@link #released}, or empty for anything else} */
    static Optional<Released> parse(byte[] data) {
      if (data == null) {
        return Optional.empty();
      }
      String[] lines = new String(data, StandardCharsets.UTF_8).split("\n");
      String holder = null;
      Long token = null;
      for (int i = 1; i < lines.length; i++) { // the first line is the lease name
        if (lines[i].startsWith("released=")) {
          holder = lines[i].substring("released=".length());
        } else if (lines[i].startsWith("token=")) {
          try {
            token = Long.parseLong(lines[i].substring("token=".length()));
          } catch (NumberFormatException e) {
            return Optional.empty();
          }
        }
      }
      return holder == null || token == null ? Optional.empty() : Optional.of(new Released(holder, token));
    }
  }

  /**
   * What a lease node holds while a tenure has not been released: who holds it, in which session,
   * for how long after that session was last heard. It stays when the holder node is deleted by
   * anyone but the holder's release, so that contenders know a tenure may still run: they wait
   * until the session has ended (its session node is gone), the holder confirmed that it stopped
   * (it rewrote the record as {@link #noTenure}), or the TTL has passed since they first saw it so.
   */
  record TenureRecord(HolderId holder, long session, long ttlMillis) {

    private static final String MAGIC = "leasehold-tenure";

    byte[] toBytes() {
      return (MAGIC + "\nholder=" + holder + "\nsession=" + Long.toHexString(session) + "\nttlMillis="
              + ttlMillis + "\n")
          .getBytes(StandardCharsets.UTF_8);
    }

    /** Parses what {@link #toBytes()} wrote; empty for anything else (no tenure recorded). */
    static Optional<TenureRecord> parse(byte[] data) {
      if (data == null) {
        return Optional.empty();
      }
      String[] lines = new String(data, StandardCharsets.UTF_8).split("\n");
      if (lines.length == 0 || !lines[0].equals(MAGIC)) {
        return Optional.empty(); // a lease name: lease names have no control characters
      }
      String holder = null;
      Long session = null;
      Long ttl = null;
      try {
        for (String line : lines) {
          int eq = line.indexOf('=');
          if (eq < 0) {
            continue;
          }
          String value = line.substring(eq + 1);
          switch (line.substring(0, eq)) {
            case "holder" -> holder = value;
            case "session" -> session = Long.parseUnsignedLong(value, 16);
            case "ttlMillis" -> ttl = Long.parseLong(value);
            default -> { }
          }
        }
        if (holder == null || session == null || ttl == null || ttl <= 0) {
          return Optional.empty();
        }
        return Optional.of(new TenureRecord(HolderId.parse(holder), session, ttl));
      } catch (IllegalArgumentException e) {
        return Optional.empty();
      }
    }
  }

  /**
   * What a holder node holds: who, which acquire call, and the lease node's data version that the
   * creating transaction left ({@code generation}), which a release checks so that it can never
   * delete a later tenure's node.
   */
  record HolderRecord(HolderId holder, long requestId, int generation) {

    byte[] toBytes() {
      return ("holder=" + holder + "\nrequest=" + requestId + "\ngeneration=" + generation + "\n")
          .getBytes(StandardCharsets.UTF_8);
    }

    /** Parses what {@link #toBytes()} wrote; empty for anything else (not a Leasehold node). */
    static Optional<HolderRecord> parse(byte[] data) {
      if (data == null) {
        return Optional.empty();
      }
      String holder = null;
      Long request = null;
      Integer generation = null;
      try {
        // Owner names have no control characters, so a newline always ends a field.
        for (String line : new String(data, StandardCharsets.UTF_8).split("\n")) {
          int eq = line.indexOf('=');
          if (eq < 0) {
            continue;
          }
          String value = line.substring(eq + 1);
          switch (line.substring(0, eq)) {
            case "holder" -> holder = value;
            case "request" -> request = Long.parseLong(value);
            case "generation" -> generation = Integer.parseInt(value);
            default -> { }
          }
        }
        if (holder == null || request == null || generation == null) {
          return Optional.empty();
        }
        return Optional.of(new HolderRecord(HolderId.parse(holder), request, generation));
      } catch (IllegalArgumentException e) {
        return Optional.empty();
      }
    }
  }
}
