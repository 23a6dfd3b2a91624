package io.leasehold.core.proto;

import java.util.List;
import java.util.Locale;

/**
 * The rights of the core's access control as users write them ({@code lease}, {@code read},
 * {@code write}, {@code watch}, {@code admin}), for the node's messages, the client's calls and
 * the CLI alike.
 */
public final class AclRights {

  /** The rights a user may name, in order. */
  public static final List<AclRight> ALL =
      List.of(
          AclRight.ACL_RIGHT_LEASE,
          AclRight.ACL_RIGHT_READ,
          AclRight.ACL_RIGHT_WRITE,
          AclRight.ACL_RIGHT_WATCH,
          AclRight.ACL_RIGHT_ADMIN);

  /** The words, in order, as one list for messages: "lease, read, write, watch, admin". */
  public static final String WORDS = "lease, read, write, watch, admin";

  private AclRights() {}

  /** {@return the word for a right; the enum's name for one users cannot name} */
  public static String word(AclRight right) {
    return switch (right) {
      case ACL_RIGHT_LEASE -> "lease";
      case ACL_RIGHT_READ -> "read";
      case ACL_RIGHT_WRITE -> "write";
      case ACL_RIGHT_WATCH -> "watch";
      case ACL_RIGHT_ADMIN -> "admin";
      default -> right.name();
    };
  }

  /**
   * {@return the right a word names (any case)}
   *
   * @throws IllegalArgumentException "must be one of lease, read, write, watch, admin; was …"
   */
  public static AclRight parse(String word) {
    for (AclRight r : ALL) {
      if (word(r).equals(word.toLowerCase(Locale.ROOT))) {
        return r;
      }
    }
    throw new IllegalArgumentException("must be one of " + WORDS + "; was \"" + word + "\"");
  }
}
