package io.leasehold.server.edge;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import java.security.cert.Certificate;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.security.cert.X509Certificate;
import javax.naming.InvalidNameException;
import javax.naming.ldap.LdapName;
import javax.naming.ldap.Rdn;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;
import javax.security.auth.x500.X500Principal;

/**
 * Who a client is: the subject of the TLS client certificate it showed, or {@link #ANONYMOUS} for
 * a plaintext client or one that showed no certificate. A subject is written in RFC 2253 (as
 * {@link X500Principal#getName(String)} writes it, so {@code "CN=billing, O=Acme"} and {@code
 * "CN=billing,O=Acme"} are one identity) with its attributes in one order, sorted by type (then
 * value), whatever order the certificate lists them in: {@code openssl req -subj
 * "/CN=admin/O=Acme"} makes a certificate whose subject RFC 2253 writes {@code "O=Acme,CN=admin"},
 * while people write {@code "CN=admin,O=Acme"}; both name one identity, so a root identity or an
 * ACL entry written either way matches the certificate. Subject alternative names are not used. Read at the gRPC edge by {@link
 * #interceptor()}, which puts it in the call's {@link Context}; {@link #current()} reads it there.
 */
public final class ClientIdentity {

  /** Every client without a certificate (plaintext, or TLS with {@code --client-auth optional}). */
  public static final ClientIdentity ANONYMOUS = new ClientIdentity("");

  /** How {@link #ANONYMOUS} is written in ACLs and commands: it is no RFC 2253 name (no '='). */
  public static final String ANONYMOUS_NAME = "anonymous";

  private static final Context.Key<ClientIdentity> KEY = Context.key("leasehold-client-identity");

  /** The SSL session's own cache of its peer's identity: parsed once per session, not per call. */
  private static final String SESSION_VALUE = "io.leasehold.server.edge.ClientIdentity";

  private final String name;

  private ClientIdentity(String name) {
    this.name = name;
  }

  /**
   * {@return the identity {@code text} names: {@value #ANONYMOUS_NAME}, or a distinguished name
   * in RFC 2253 (or RFC 1779) form, normalised as the edge writes a certificate's subject}
   *
   * @throws IllegalArgumentException if it is neither (the message names the allowed forms)
   */
  public static ClientIdentity parse(String text) {
    if (text.equals(ANONYMOUS_NAME)) {
      return ANONYMOUS;
    }
    if (text.isBlank()) {
      throw new IllegalArgumentException(
          "identity must be a certificate subject such as \"CN=billing,O=Acme\" or \"" + ANONYMOUS_NAME + "\"; was empty");
    }
    try {
      return ofSubject(new X500Principal(text));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "identity must be a certificate subject such as \"CN=billing,O=Acme\" (RFC 2253) or \"" + ANONYMOUS_NAME
              + "\"; was \"" + text + "\": " + e.getMessage(), e);
    }
  }

  /**
   * {@return the identity a certificate subject names: its RFC 2253 form, attributes sorted;
   * anonymous for an empty subject (no name: the docs say to name clients)}
   */
  static ClientIdentity ofSubject(X500Principal subject) {
    String rfc2253 = subject.getName(X500Principal.RFC2253);
    return rfc2253.isEmpty() ? ANONYMOUS : new ClientIdentity(sorted(rfc2253));
  }

  /**
   * The attributes of an RFC 2253 name in one order: its relative names sorted as {@link Rdn}
   * compares them (type without case, then value), joined again. A name of one attribute, the
   * common case, is returned as it is.
   */
  private static String sorted(String rfc2253) {
    try {
      List<Rdn> rdns = new ArrayList<>(new LdapName(rfc2253).getRdns());
      if (rdns.size() < 2) {
        return rfc2253;
      }
      Collections.sort(rdns);
      StringBuilder out = new StringBuilder();
      for (Rdn rdn : rdns) {
        out.append(out.length() == 0 ? "" : ",").append(rdn);
      }
      return out.toString();
    } catch (InvalidNameException e) {
      return rfc2253; // X500Principal wrote it, so LDAP syntax reads it; never happens
    }
  }

  /** {@return the identity of a state or log entry's field: empty for anonymous} */
  public static ClientIdentity ofStored(String stored) {
    return stored.isEmpty() ? ANONYMOUS : new ClientIdentity(stored);
  }

  /** {@return the identity of the call being served; {@link #ANONYMOUS} outside a call} */
  public static ClientIdentity current() {
    ClientIdentity identity = KEY.get();
    return identity == null ? ANONYMOUS : identity;
  }

  /** {@return the normalised subject; empty for {@link #ANONYMOUS} (how it is stored and logged)} */
  public String stored() {
    return name;
  }

  /** {@return whether this is {@link #ANONYMOUS}} */
  public boolean isAnonymous() {
    return name.isEmpty();
  }

  /** {@return the identity as users write it: the subject, or {@value #ANONYMOUS_NAME}} */
  @Override
  public String toString() {
    return name.isEmpty() ? ANONYMOUS_NAME : name;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ClientIdentity other && other.name.equals(name);
  }

  @Override
  public int hashCode() {
    return name.hashCode();
  }

  /**
   * {@return an interceptor that puts each call's identity in its {@link Context}: the subject of
   * the peer's certificate, read once per TLS session (cached in the session), or nothing for an
   * anonymous call, so a plaintext call costs no context of its own}
   */
  public static ServerInterceptor interceptor() {
    return new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(
          ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        ClientIdentity identity = of(call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION));
        if (identity.isAnonymous()) {
          return next.startCall(call, headers);
        }
        return Contexts.interceptCall(Context.current().withValue(KEY, identity), call, headers, next);
      }
    };
  }

  /** {@return the identity of the peer of {@code session}; anonymous for none or no certificate} */
  static ClientIdentity of(SSLSession session) {
    if (session == null) {
      return ANONYMOUS;
    }
    Object cached = session.getValue(SESSION_VALUE);
    if (cached instanceof ClientIdentity identity) {
      return identity;
    }
    ClientIdentity identity = ANONYMOUS;
    try {
      Certificate[] chain = session.getPeerCertificates();
      if (chain.length > 0 && chain[0] instanceof X509Certificate leaf) {
        identity = ofSubject(leaf.getSubjectX500Principal());
      }
    } catch (SSLPeerUnverifiedException e) {
      // No client certificate (--client-auth optional): anonymous.
    }
    try {
      session.putValue(SESSION_VALUE, identity);
    } catch (UnsupportedOperationException | IllegalArgumentException e) {
      // A session that keeps no values: read the certificate again next call.
    }
    return identity;
  }
}
