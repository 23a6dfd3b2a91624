package io.leasehold.etcd;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.ClientBuilder;
import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdException;
import io.grpc.netty.GrpcSslContexts;
import io.leasehold.LeaseException;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.spi.Failures;
import io.leasehold.spi.SecretFiles;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import javax.net.ssl.SSLException;

/**
 * How this backend reaches a secured etcd: the TLS context made from the URI's (or the builder's)
 * {@code ca}, {@code cert} and {@code key} files, and the user and password it authenticates as.
 * Every file is read, and every problem refused, when the backend is opened, before a connection
 * or a thread is made. It also turns etcd's refusals (a wrong password, a user without permission,
 * a failed TLS handshake) into a {@link LeaseStoreUnavailableException} that says so.
 *
 * <p>Neither the password nor anything read from a key file ever appears in a message, a log line
 * or {@link #toString()}.
 */
final class EtcdAccess {

  private final String uri;
  private final String namespace;
  private final String user;
  private final SslContext tls;
  private final AtomicReference<CompletableFuture<Throwable>> handshakeFailed =
      new AtomicReference<>(new CompletableFuture<>());
  /** The password's bytes until they are handed to jetcd; null without a user. */
  private byte[] password;

  private EtcdAccess(String uri, String namespace, String user, SslContext tls, byte[] password) {
    this.uri = uri;
    this.namespace = namespace;
    this.user = user;
    this.tls = tls;
    this.password = password;
  }

  /**
   * Reads and checks the files the URI names.
   *
   * @param uri the checked URI
   * @param password the user's password given to the builder; null when it is in {@code
   *     uri.passwordFile()} (or there is no user). Copied; the caller may clear it.
   * @throws IllegalArgumentException naming the parameter (and its file) that is missing,
   *     unreadable or not what it should be
   */
  static EtcdAccess load(EtcdUri uri, char[] password) {
    if (uri.user() != null && uri.passwordFile() == null && password == null) {
      throw new IllegalArgumentException(
          "etcd backend " + uri.canonical() + ": user=" + uri.user() + " needs password-file=FILE"
              + " (or, with the builder, password(...))");
    }
    if (uri.user() == null && password != null) {
      throw new IllegalArgumentException(
          "etcd backend " + uri.canonical() + ": a password needs user=NAME (whose password it is)");
    }
    SslContext tls = uri.secure() ? tls(uri) : null;
    byte[] secret = null;
    if (uri.passwordFile() != null) {
      secret = passwordFile(uri.passwordFile());
    } else if (password != null) {
      // Encoded without a String, which would linger in the heap.
      java.nio.ByteBuffer encoded =
          java.nio.charset.StandardCharsets.UTF_8.encode(java.nio.CharBuffer.wrap(password));
      secret = new byte[encoded.remaining()];
      encoded.get(secret);
      Arrays.fill(encoded.array(), (byte) 0);
      if (secret.length == 0) {
        throw new IllegalArgumentException("etcd backend: the password of user " + uri.user() + " is empty");
      }
    }
    return new EtcdAccess(uri.canonical(), uri.namespace(), uri.user(), tls, secret);
  }

  private static SslContext tls(EtcdUri uri) {
    readable("ca", uri.ca());
    checkCertificates("ca", uri.ca());
    if (uri.cert() != null) {
      readable("cert", uri.cert());
      readable("key", uri.key());
      SecretFiles.requireOwnerOnly(uri.key(), "etcd backend: key=" + uri.key());
      checkCertificates("cert", uri.cert());
    }
    // gRPC's client defaults (HTTP/2 over ALPN, its cipher suites). The host name check stays
    // on: gRPC's TLS handler checks each member's certificate against the host it dialled.
    SslContextBuilder b = GrpcSslContexts.forClient();
    try {
      b.trustManager(uri.ca().toFile());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "etcd backend: ca=" + uri.ca() + " cannot be used as trusted certificates: " + Failures.rootMessage(e), e);
    }
    if (uri.cert() != null) {
      try {
        b.keyManager(uri.cert().toFile(), uri.key().toFile());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "etcd backend: key=" + uri.key() + " (with cert=" + uri.cert() + ") is not a usable PEM"
                + " PKCS#8 private key for that certificate: " + Failures.rootMessage(e), e);
      }
    }
    try {
      return b.build();
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException(
          "etcd backend: the TLS files (ca=" + uri.ca()
              + (uri.cert() == null ? "" : ", cert=" + uri.cert() + ", key=" + uri.key())
              + ") cannot be used: " + Failures.rootMessage(e), e);
    }
  }

  private static void readable(String parameter, Path file) {
    if (!Files.exists(file)) {
      throw new IllegalArgumentException("etcd backend: " + parameter + "=" + file + ": the file does not exist");
    }
    if (!Files.isRegularFile(file) || !Files.isReadable(file)) {
      throw new IllegalArgumentException("etcd backend: " + parameter + "=" + file + ": not a readable file");
    }
  }

  private static void checkCertificates(String parameter, Path file) {
    try (InputStream in = Files.newInputStream(file)) {
      if (CertificateFactory.getInstance("X.509").generateCertificates(in).isEmpty()) {
        throw new IllegalArgumentException(
            "etcd backend: " + parameter + "=" + file + ": holds no PEM certificate");
      }
    } catch (IOException | CertificateException e) {
      throw new IllegalArgumentException(
          "etcd backend: " + parameter + "=" + file + ": not a PEM certificate file ("
              + Failures.rootMessage(e) + ")", e);
    }
  }

  /**
   * The password is the file's content without one trailing line break (as {@code echo} and
   * editors leave, and as etcdctl's {@code --password} would not have).
   */
  private static byte[] passwordFile(Path file) {
    readable("password-file", file);
    SecretFiles.requireOwnerOnly(file, "etcd backend: password-file=" + file);
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(file);
    } catch (IOException e) {
      // The exception's message names the file, never its content.
      throw new IllegalArgumentException(
          "etcd backend: password-file=" + file + ": cannot be read (" + e.getClass().getSimpleName() + ")", e);
    }
    int end = bytes.length;
    if (end > 0 && bytes[end - 1] == '\n') {
      end--;
      if (end > 0 && bytes[end - 1] == '\r') {
        end--;
      }
    }
    byte[] password = Arrays.copyOf(bytes, end);
    Arrays.fill(bytes, (byte) 0);
    if (password.length == 0) {
      throw new IllegalArgumentException("etcd backend: password-file=" + file + ": the file is empty");
    }
    return password;
  }

  /**
   * {@return completes with the failure of the last call if its TLS handshake failed and no call
   * succeeded since; never completes while calls succeed, or without TLS}
   */
  CompletableFuture<Throwable> handshakeFailed() {
    return handshakeFailed.get();
  }

  /**
   * Sees every call's outcome. A call on a channel whose TLS handshake failed fails at once (not
   * waiting for ready), but jetcd retries it with a back-off longer than an acquire's operation
   * timeout, so the engine would report only that the store did not answer in time. The store fails an acquire with the
   * handshake's failure instead, as soon as a call saw it (and until a call succeeds).
   */
  private final class HandshakeWatch implements ClientInterceptor {
    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(
        MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
      return new ForwardingClientCall.SimpleForwardingClientCall<Q, R>(next.newCall(method, options)) {
        @Override
        public void start(Listener<R> listener, Metadata headers) {
          super.start(new ForwardingClientCallListener.SimpleForwardingClientCallListener<R>(listener) {
            @Override
            public void onClose(Status status, Metadata trailers) {
              if (status.isOk()) {
                if (handshakeFailed.get().isDone()) {
                  handshakeFailed.set(new CompletableFuture<>());
                }
              } else if (status.getCode() == Status.Code.UNAVAILABLE
                  && (refusal(status.getCause()) == Refusal.TLS || mentionsTls(status.getDescription()))) {
                handshakeFailed.get().complete(status.asRuntimeException());
              }
              super.onClose(status, trailers);
            }
          }, headers);
        }
      };
    }
  }

  private static boolean mentionsTls(String description) {
    String d = description == null ? "" : description.toLowerCase(Locale.ROOT);
    return d.contains("ssl") || d.contains("handshake") || d.contains("certificate");
  }

  /** {@return whether the members are reached over TLS} */
  boolean secure() {
    return tls != null;
  }

  /** {@return the user this backend authenticates as; null for none} */
  String user() {
    return user;
  }

  /** Gives the client builder the TLS context and the credentials; the password only once. */
  ClientBuilder apply(ClientBuilder builder) {
    // Without waitForReady (jetcd's default is to wait) a call fails at once while no member can
    // be connected to (refused, unreachable, a failed TLS handshake) instead of waiting out its
    // timeout for a connection that never comes: the engine retries it as any failed call, and
    // when it gives up it says what happened, refused rather than "did not answer" (outcome
    // unknown), which took a user three whole timeouts to learn. A call made while the first
    // connection is still being made still waits for it (gRPC fails fast only once connecting
    // failed), and a member that is down is skipped for one that is up.
    builder.waitForReady(false);
    if (tls != null) {
      builder.sslContext(tls).interceptor(new HandshakeWatch());
    }
    if (user != null && password != null) {
      builder.user(ByteSequence.from(user, java.nio.charset.StandardCharsets.UTF_8))
          .password(ByteSequence.from(password));
      Arrays.fill(password, (byte) 0);
      password = null;
    }
    return builder;
  }

  /**
   * {@return the failure of {@code what}, as the engine reports it} etcd's refusal of the
   * credentials or of a right, and a failed TLS handshake, say so and name etcd, the user and what
   * was refused; anything else is the store being unavailable, as before. All are {@link
   * LeaseStoreUnavailableException}s: the store refused the request for now, and trying again
   * succeeds once an operator fixed the password, the role or the certificate; nothing was
   * written.
   *
   * @param what what was attempted and that it failed, as "the acquire transaction for 'x'
   *     failed"
   * @param error the failure, as a future's handler receives it
   */
  LeaseException failure(String what, Throwable error) {
    Throwable cause = Failures.unwrap(error);
    String who = user != null ? "user '" + user + "'" : "this client (no user given)";
    String because = Failures.rootMessage(error);
    switch (refusal(cause)) {
      case PERMISSION:
        return new LeaseStoreUnavailableException(
            "etcd (" + uri + ") denied " + who + " permission: " + what + " (" + because
                + "); the user's roles need readwrite on the key prefix " + namespace + "/", cause);
      case AUTHENTICATION:
        return new LeaseStoreUnavailableException(
            "etcd (" + uri + ") did not accept the password of " + who + ": " + what + " ("
                + because + "); check user= and the password in password-file=", cause);
      case NO_USER:
        return new LeaseStoreUnavailableException(
            "etcd (" + uri + ") has authentication on and " + who + ": " + what + " (" + because
                + "); give user= and password-file=", cause);
      case TLS:
        return new LeaseStoreUnavailableException(
            "the TLS handshake with etcd (" + uri + ") failed: " + what + " (" + tlsReason(cause, because)
                + "); check ca=, cert= and key= against the members' certificates and their"
                + " --trusted-ca-file", cause);
      default:
        return Session.unavailable(what, error);
    }
  }

  /** gRPC says only "ssl exception"; the handshake's own failure says what was wrong. */
  private static String tlsReason(Throwable error, String fallback) {
    String reason = null;
    for (Throwable e = error; e != null; e = e.getCause() == e ? null : e.getCause()) {
      if (e instanceof SSLException && e.getMessage() != null) {
        reason = e.getMessage();
      }
    }
    return reason != null ? fallback + ": " + reason : fallback;
  }

  private enum Refusal { NONE, PERMISSION, AUTHENTICATION, NO_USER, TLS }

  private static Refusal refusal(Throwable error) {
    for (Throwable e = error; e != null; e = e.getCause() == e ? null : e.getCause()) {
      if (e instanceof SSLException
          || (e instanceof io.grpc.StatusRuntimeException sre
              && sre.getStatus().getCode() == Status.Code.UNAVAILABLE
              && mentionsTls(sre.getStatus().getDescription()))) {
        return Refusal.TLS;
      }
      String message = e.getMessage() == null ? "" : e.getMessage().toLowerCase(Locale.ROOT);
      if (message.contains("user name is empty")) {
        return Refusal.NO_USER;
      }
      if (message.contains("authentication failed") || message.contains("invalid user id or password")) {
        return Refusal.AUTHENTICATION;
      }
      if (message.contains("permission denied")) {
        return Refusal.PERMISSION;
      }
      if (e instanceof EtcdException ee) {
        if (ee.getErrorCode() == ErrorCode.PERMISSION_DENIED) {
          return Refusal.PERMISSION;
        }
        if (ee.getErrorCode() == ErrorCode.UNAUTHENTICATED) {
          return Refusal.AUTHENTICATION;
        }
      }
    }
    return Refusal.NONE;
  }

  @Override
  public String toString() {
    return "EtcdAccess[" + uri + (tls != null ? ", TLS" : "") + (user != null ? ", user " + user : "") + "]";
  }
}
