package io.leasehold.kubernetes;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * How a Leasehold lease name becomes the name of a {@code coordination.k8s.io/v1} Lease object.
 *
 * <p>Kubernetes accepts only DNS-1123 subdomains as object names: at most 253 characters of
 * lower-case letters, digits, {@code '-'} and {@code '.'}, each dot-separated part starting and
 * ending with a letter or digit. Lease names are freer (up to 256 characters, any case, most
 * characters), so the backend maps them by this rule, never by truncation:
 *
 * <ol>
 *   <li>A name that is already a valid object name is used as it is — unless it ends in {@code
 *       '-'} followed by 20 lower-case hex digits, the form rule 2 produces.</li>
 *   <li>Any other name becomes a readable slug plus a digest: its lower-cased letters and digits,
 *       every other run of characters turned into one {@code '-'}, cut to 200 characters, then
 *       {@code '-'} and the first 20 hex digits (80 bits) of the SHA-256 digest of the original
 *       name's UTF-8 bytes. {@code "Orders/EU"} becomes {@code "orders-eu-"} plus 20 hex
 *       digits.</li>
 * </ol>
 *
 * <p>Rule 1 is the identity and rule 2 never produces a name that rule 1 passes through, so two
 * different lease names map to the same object only if their SHA-256 digests agree in the first
 * 80 bits — for practical purposes never. The original name is also kept in the object's {@code
 * leasehold.io/lease-name} annotation, so {@code kubectl get lease -o yaml} shows it.
 */
public final class KubernetesLeaseNames {

  /** Longest object name Kubernetes accepts (a DNS-1123 subdomain). */
  static final int MAX_OBJECT_NAME = 253;

  private static final int SLUG_MAX = 200;
  private static final int DIGEST_HEX_DIGITS = 20;
  private static final Pattern DNS_1123_SUBDOMAIN =
      Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  private static final Pattern DNS_1123_LABEL = Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  private static final Pattern MAPPED_FORM = Pattern.compile(".*-[0-9a-f]{" + DIGEST_HEX_DIGITS + "}");

  private KubernetesLeaseNames() {}

  /**
   * The name of the Lease object that holds a lease.
   *
   * @param leaseName the lease name as the application gives it
   * @return a valid Kubernetes object name, the same for the same lease name every time
   */
  public static String objectName(String leaseName) {
    Objects.requireNonNull(leaseName, "leaseName");
    if (isValidObjectName(leaseName) && !MAPPED_FORM.matcher(leaseName).matches()) {
      return leaseName;
    }
    return slug(leaseName) + '-' + digest(leaseName);
  }

  /** {@return whether Kubernetes accepts {@code name} as an object name} */
  static boolean isValidObjectName(String name) {
    return !name.isEmpty()
        && name.length() <= MAX_OBJECT_NAME
        && DNS_1123_SUBDOMAIN.matcher(name).matches();
  }

  /**
   * Checks a namespace name (a DNS-1123 label).
   *
   * @throws IllegalArgumentException naming the rule and the value
   */
  static String checkNamespace(String namespace) {
    if (namespace.isEmpty()
        || namespace.length() > 63
        || !DNS_1123_LABEL.matcher(namespace).matches()) {
      throw new IllegalArgumentException(
          "namespace must be a DNS-1123 label: 1-63 lower-case letters, digits or '-', starting"
              + " and ending with a letter or digit; was '" + namespace + "'");
    }
    return namespace;
  }

  private static String slug(String name) {
    StringBuilder out = new StringBuilder(Math.min(name.length(), SLUG_MAX));
    String lower = name.toLowerCase(Locale.ROOT);
    for (int i = 0; i < lower.length() && out.length() < SLUG_MAX; i++) {
      char c = lower.charAt(i);
      if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
        out.append(c);
      } else if (out.length() > 0 && out.charAt(out.length() - 1) != '-') {
        out.append('-');
      }
    }
    while (out.length() > 0 && out.charAt(out.length() - 1) == '-') {
      out.setLength(out.length() - 1);
    }
    return out.length() == 0 ? "lease" : out.toString();
  }

  private static String digest(String name) {
    try {
      byte[] sha = MessageDigest.getInstance("SHA-256").digest(name.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(sha).substring(0, DIGEST_HEX_DIGITS);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java runtime has SHA-256", e);
    }
  }
}
