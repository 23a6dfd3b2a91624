package io.leasehold.cli;

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

  private Backends() {}

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
}
