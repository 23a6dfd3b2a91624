package io.leasehold;

import java.util.regex.Pattern;

/**
 * Backend URIs as messages, log lines and {@code toString()}s may show them: without a password.
 * Every backend refuses a password written into its URI (it ends up in logs and shell history),
 * and its refusal quotes the URI; the one place the password is cut out is {@link #redacted}, for
 * every backend's parser and for {@link LeaseBackend#open}.
 */
public final class BackendUris {

  /** What a hidden password is shown as. */
  public static final String HIDDEN = "***";

  /** The value of a {@code password=} parameter (not {@code password-file=}). */
  private static final Pattern PASSWORD_PARAMETER =
      Pattern.compile("(?i)([?&]\\s*password\\s*=)[^&#]*");

  private BackendUris() {}

  /**
   * {@return the URI with any password replaced by {@value #HIDDEN}}: the password of a {@code
   * user:password@} part ({@code etcd://alice:***@host:2379}; the user stays, to say whose it
   * was) and the value of a {@code password=} parameter. A URI without either is returned as it
   * is. Made for text that may be malformed: a password holding {@code /}, {@code ?} or {@code #}
   * is hidden too, and when in doubt more is hidden, never less: with several hosts, all from the
   * first {@code :} to the last {@code @} ({@code etcd://h1:***@h2:2379}). A part of a URI ({@code
   * alice:pw@host:2379}) is redacted the same way.
   *
   * @param uri a backend URI, or any part of one, as given; null gives {@code "null"}
   */
  public static String redacted(String uri) {
    if (uri == null) {
      return "null";
    }
    return PASSWORD_PARAMETER.matcher(withoutUserInfoPassword(uri)).replaceAll("$1" + HIDDEN);
  }

  /** Hides what lies between the user's ':' and the last '@' of the authority. */
  private static String withoutUserInfoPassword(String uri) {
    int slashes = uri.indexOf("//");
    int start = slashes < 0 ? 0 : slashes + 2;
    int end = authorityEnd(uri, start);
    int at = uri.lastIndexOf('@', end - 1);
    if (at < start) {
      return uri;
    }
    int colon = uri.indexOf(':', start);
    if (colon < 0 || colon > at) {
      return uri; // a user without a password
    }
    return uri.substring(0, colon + 1) + HIDDEN + uri.substring(at);
  }

  /**
   * {@return where the authority that starts at {@code start} ends}: at the query or fragment,
   * unless an '@' follows the '?' or '#' before any '=' or '&' (a password holding one). Not at a
   * '/': a password may hold one, and a backend URI's path (a chroot, a database) rarely holds an
   * '@'.
   */
  private static int authorityEnd(String uri, int start) {
    for (int i = start; i < uri.length(); i++) {
      char c = uri.charAt(i);
      if (c == '?' || c == '#') {
        int j = i + 1;
        while (j < uri.length() && "=&@".indexOf(uri.charAt(j)) < 0) {
          j++;
        }
        if (j < uri.length() && uri.charAt(j) == '@') {
          i = j;
          continue;
        }
        return i;
      }
    }
    return uri.length();
  }
}
