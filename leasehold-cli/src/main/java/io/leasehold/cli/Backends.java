package io.leasehold.cli;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.StringJoiner;

/**
 * Which backend the commands use when none is given: {@code $LEASEHOLD_BACKEND}, else the URI
 * that {@code leasehold dev} prints with its default options, so that {@code leasehold dev} in one
 * terminal and any other command in a second work together with no flags. The one place that
 * default is written.
 */
final class Backends {

  /** The environment variable that names the default backend. */
  static final String ENV = "LEASEHOLD_BACKEND";

  /** How many nodes {@code dev} starts by default. */
  static final int DEV_NODES = 3;

  /** The first client port of {@code dev}'s nodes by default. */
  static final int DEV_PORT = 7000;

  /** The host {@code dev}'s nodes listen on. */
  static final String DEV_HOST = "127.0.0.1";

  /**
   * The URI {@code dev} prints with its defaults: {@link #devUri} of {@link #DEV_NODES} and {@link
   * #DEV_PORT}. A constant so option descriptions can show it; a test keeps the two equal.
   */
  static final String DEV_URI = "leasehold://127.0.0.1:7000,127.0.0.1:7002,127.0.0.1:7004";

  /** The longest TTL any backend takes ({@code LeaseSettings}' own limit). */
  static final Duration MAX_TTL = Duration.ofHours(24);

  /**
   * The shortest TTL {@code run} takes on a store over the network. A lease's calls get
   * {@code ttl/6} by default, and the first acquire of a fresh {@code leasehold run} JVM connects
   * in that time too: with {@code --ttl 500ms} (83 ms) it timed out every time against a healthy
   * {@code leasehold dev}, and 2s failed on a loaded machine. Programs that keep a backend open
   * (a warm connection) can go lower: see each backend's page.
   */
  static final Duration MIN_NETWORK_TTL = Duration.ofSeconds(5);

  /** The shortest TTL on the in-process {@code memory:} store. */
  static final Duration MIN_MEMORY_TTL = Duration.ofMillis(1);

  private Backends() {}

  /** {@return the URI's scheme, lower case, without the colon; empty if it has none} */
  static String scheme(String uri) {
    int colon = uri.indexOf(':');
    return colon <= 0 ? "" : uri.substring(0, colon).strip().toLowerCase(Locale.ROOT);
  }

  /** {@return the shortest {@code --ttl} {@code run} accepts on the store of this URI} */
  static Duration minTtl(String uri) {
    return scheme(uri).equals("memory") ? MIN_MEMORY_TTL : MIN_NETWORK_TTL;
  }

  /**
   * {@return what to try when the store of this URI did not answer}: {@code ./leasehold dev} only
   * for the cluster it starts, a check of its own for every other kind of store.
   */
  static String unreachableHint(String uri) {
    if (scheme(uri).equals("leasehold")) {
      String tls = tlsNode(uri);
      if (tls != null) {
        return "The node at " + tls + " speaks TLS, not plaintext: give its leaseholds:// URI, --backend"
            + " 'leaseholds://HOST:PORT,...?ca=FILE&cert=FILE&key=FILE' (`./leasehold dev --tls` prints its own).";
      }
    }
    return switch (scheme(uri)) {
      case "leaseholds" -> "Is the cluster running with TLS, are these its nodes' client ports, and do its"
          + " certificates come from the authority in ca= and name these hosts? The error above"
          + " says what the TLS handshake found.";
      case "leasehold" -> uri.equals(DEV_URI)
          ? "Is `./leasehold dev` running? Start it in another terminal, or name your cluster with"
              + " --backend URI or $" + ENV + "."
          : "Is the cluster running, and are these its nodes' client ports?";
      case "etcd" -> "Is etcd running at that address? `etcdctl --endpoints=... endpoint health`"
          + " checks it.";
      case "zookeeper" -> "Is ZooKeeper running at that address? `echo ruok | nc HOST PORT` checks"
          + " it (4-letter words permitting).";
      case "kubernetes" -> "Can this machine reach the Kubernetes API server of your kubeconfig?"
          + " `kubectl get leases` checks it.";
      default -> "Is the store running? Name it with --backend URI or $" + ENV + ".";
    };
  }

  /**
   * {@return the warning for a command that coordinates processes, when its store is {@code
   * memory:}}, or null for any other store: a {@code memory:} store lives and dies with this one
   * process, so a second process's command coordinates with nobody.
   *
   * @param command what another process would run, e.g. {@code leasehold run}
   * @param what what it would not see, e.g. {@code this lease}
   */
  static String memoryWarning(String uri, String command, String what) {
    return scheme(uri).equals("memory")
        ? "warning: memory: is a store inside this one process: a `" + command + "` in another process does"
            + " not see " + what + ", so nothing is coordinated across processes; use a shared store (`./leasehold"
            + " dev` prints one)"
        : null;
  }

  /**
   * {@return the first node of a plaintext core URI that answers a TLS handshake, as host:port, or
   * null}: a cluster that serves TLS only closes a plaintext connection without a word, so a
   * plaintext client sees only a failed connection. The handshake trusts any certificate: it sends
   * nothing, and only asks whether the port speaks TLS.
   */
  static String tlsNode(String uri) {
    java.util.List<java.net.InetSocketAddress> endpoints;
    try {
      endpoints = io.leasehold.client.CoreBackendProvider.target(uri).endpoints();
    } catch (IllegalArgumentException e) {
      return null;
    }
    for (java.net.InetSocketAddress a : endpoints) {
      if (speaksTls(a)) {
        return a.getHostString() + ":" + a.getPort();
      }
    }
    return null;
  }

  private static final int TLS_PROBE_MILLIS = 1000;

  private static boolean speaksTls(java.net.InetSocketAddress address) {
    boolean[] certificateShown = {false};
    javax.net.ssl.X509TrustManager recordOnly =
        new javax.net.ssl.X509TrustManager() {
          @Override
          public void checkClientTrusted(java.security.cert.X509Certificate[] chain, String authType)
              throws java.security.cert.CertificateException {
            throw new java.security.cert.CertificateException("a probe is no server");
          }

          @Override
          public void checkServerTrusted(java.security.cert.X509Certificate[] chain, String authType) {
            certificateShown[0] = true;
          }

          @Override
          public java.security.cert.X509Certificate[] getAcceptedIssuers() {
            return new java.security.cert.X509Certificate[0];
          }
        };
    try (java.net.Socket plain = new java.net.Socket()) {
      // The URI's addresses are unresolved (gRPC resolves them itself).
      plain.connect(new java.net.InetSocketAddress(address.getHostString(), address.getPort()), TLS_PROBE_MILLIS);
      plain.setSoTimeout(TLS_PROBE_MILLIS);
      javax.net.ssl.SSLContext context = javax.net.ssl.SSLContext.getInstance("TLS");
      context.init(null, new javax.net.ssl.TrustManager[] {recordOnly}, null);
      try (javax.net.ssl.SSLSocket socket = (javax.net.ssl.SSLSocket)
          context.getSocketFactory().createSocket(plain, address.getHostString(), address.getPort(), false)) {
        // gRPC's nodes refuse a handshake without ALPN's h2 before they show a certificate.
        javax.net.ssl.SSLParameters parameters = socket.getSSLParameters();
        parameters.setApplicationProtocols(new String[] {"h2"});
        socket.setSSLParameters(parameters);
        socket.startHandshake();
      }
    } catch (java.io.IOException | java.security.GeneralSecurityException | RuntimeException e) {
      // Refused, not TLS, or a node asking for a client certificate: the flag says what was seen.
    }
    return certificateShown[0];
  }

  /** {@return {@code $LEASEHOLD_BACKEND} if set and not blank, else {@link #DEV_URI}} */
  static String defaultUri() {
    return defaultUri(System.getenv());
  }

  /** {@return the default backend given these environment variables} */
  static String defaultUri(Map<String, String> env) {
    String fromEnv = env.get(ENV);
    return fromEnv != null && !fromEnv.isBlank() ? fromEnv.strip() : DEV_URI;
  }

  /** {@return the option's value if given, else {@link #defaultUri()}} */
  static String orDefault(String option) {
    return option != null ? option : defaultUri();
  }

  /**
   * {@return the URI of a {@code dev} cluster of {@code nodes} nodes whose first client port is
   * {@code port}: node i (from 0) listens for clients on {@code port + 2i}, and on the port after
   * for Raft} As {@code LocalCluster} numbers its nodes.
   */
  static String devUri(int nodes, int port) {
    StringJoiner uri = new StringJoiner(",", "leasehold://", "");
    for (int i = 0; i < nodes; i++) {
      uri.add(DEV_HOST + ":" + (port + 2 * i));
    }
    return uri.toString();
  }

  /**
   * {@return the nodes of a core URI, and its TLS files for {@code leaseholds://}} for the
   * commands that work on the consistent core only.
   *
   * @param cmd the command, for the error
   * @param backendOption the {@code --backend} value as given, or null when {@code uri} came from
   *     the environment or the default
   * @param uri the URI to read
   * @param aside why the command needs the core, said in the error
   * @throws ParameterException naming the flag (or variable) and the URI problem
   */
  static io.leasehold.client.CoreTarget coreTarget(
      picocli.CommandLine cmd, String backendOption, String uri, String aside) {
    String source = backendOption != null ? "--backend" : "$" + ENV;
    try {
      return io.leasehold.client.CoreBackendProvider.target(uri);
    } catch (IllegalArgumentException e) {
      throw new picocli.CommandLine.ParameterException(
          cmd,
          source + " must be a core URI, leasehold://host:port,host:port,... or"
              + " leaseholds://host:port,...?ca=FILE&cert=FILE&key=FILE (" + aside + "): "
              + e.getMessage());
    }
  }
}
