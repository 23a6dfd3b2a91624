package io.leasehold.postgresql;

import io.leasehold.BackendUris;
import io.leasehold.spi.UriEscapes;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A parsed {@code postgresql://} backend URI, in the spirit of the JDBC one:
 *
 * <pre>
 * postgresql://host[:port][,host[:port]...]/database[?schema=NAME][&amp;user=NAME][&amp;password-file=FILE]
 *     [&amp;sslmode=MODE][&amp;sslrootcert=FILE][&amp;create-schema=true|false][&amp;connections=N]
 * </pre>
 *
 * <p>Credentials never go in the URI: a {@code user:password@} part or a {@code password=}
 * parameter is refused. The password comes from {@code password-file}, from the builder, or — with
 * neither — from the driver's own {@code PGPASSFILE} / {@code ~/.pgpass} lookup.
 */
record PostgresUri(
    List<String> hosts,
    String database,
    String schema,
    String user,
    Path passwordFile,
    String sslMode,
    Path sslRootCert,
    boolean createSchema,
    int connections) {

  /** The schema used when the URI names none. */
  static final String DEFAULT_SCHEMA = "leasehold";

  /** PostgreSQL's default port. */
  static final int DEFAULT_PORT = 5432;

  /** The most worker connections one backend may ask for (beside its heartbeat connection). */
  static final int MAX_CONNECTIONS = 64;

  static final String FORM =
      "postgresql://host[:port][,host[:port]...]/database[?schema=NAME&user=NAME"
          + "&password-file=FILE&sslmode=MODE&sslrootcert=FILE&create-schema=true|false"
          + "&connections=1.." + MAX_CONNECTIONS + "]";

  private static final Set<String> PARAMETERS =
      Set.of(
          "schema", "user", "password-file", "sslmode", "sslrootcert", "create-schema",
          "connections");

  private static final Set<String> SSL_MODES =
      Set.of("disable", "allow", "prefer", "require", "verify-ca", "verify-full");

  /**
   * An unquoted lower-case SQL identifier, usable in statements without quoting; 56 characters at
   * most, so that the notification channel {@code <schema>_leases} fits PostgreSQL's 63-byte
   * identifiers (a longer channel name is an error in {@code pg_notify}, and {@code LISTEN} would
   * cut it).
   */
  static final int MAX_SCHEMA_LENGTH = 56;

  private static final Pattern IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]{0," + (MAX_SCHEMA_LENGTH - 1) + "}");

  private static final Pattern HOST = Pattern.compile("[A-Za-z0-9._-]+|\\[[0-9A-Fa-f:.]+]");

  PostgresUri {
    hosts = List.copyOf(hosts);
  }

  /**
   * Parses and checks a URI.
   *
   * @param uri the backend URI
   * @return its parts
   * @throws IllegalArgumentException naming the part that is wrong and what is allowed
   */
  static PostgresUri parse(String uri) {
    Objects.requireNonNull(uri, "uri");
    String scheme = "postgresql://";
    if (!uri.regionMatches(true, 0, scheme, 0, scheme.length())) {
      throw bad(uri, "it must start with postgresql://");
    }
    String rest = uri.substring(scheme.length());
    String query = null;
    int q = rest.indexOf('?');
    if (q >= 0) {
      query = rest.substring(q + 1);
      rest = rest.substring(0, q);
    }
    int slash = rest.indexOf('/');
    String afterSlash = slash < 0 ? "" : rest.substring(slash + 1);
    int queryAt = query == null ? -1 : query.indexOf('@');
    if ((slash < 0 ? rest : rest.substring(0, slash)).indexOf('@') >= 0
        // A password holding '/' or '?' ends the hosts inside it: 'alice:pa/ss@host/db' has the
        // database 'ss@host/db' (no database holds '/'), 'alice:pa?ss@host/db' a parameter 'ss@...'.
        || afterSlash.indexOf('@') >= 0 && afterSlash.indexOf('/') > afterSlash.indexOf('@')
        || queryAt >= 0 && (query.indexOf('=') < 0 || queryAt < query.indexOf('='))) {
      throw bad(uri, "credentials must not be in the URI (user@ or user:password@); give user=NAME"
          + " and password-file=FILE, or let the driver read PGPASSFILE or ~/.pgpass");
    }
    if (slash < 0) {
      throw bad(uri, "database: the URI must name a database after the hosts, as in"
          + " postgresql://host:5432/mydb");
    }
    String authority = rest.substring(0, slash);
    String database = decode(uri, "database", afterSlash);
    if (authority.isEmpty()) {
      throw bad(uri, "host: at least one host is needed, as in postgresql://localhost:5432/mydb");
    }
    List<String> hosts = new ArrayList<>();
    for (String part : authority.split(",", -1)) {
      hosts.add(hostAndPort(uri, part));
    }
    if (database.isEmpty() || database.length() > 63 || database.chars().anyMatch(Character::isISOControl)
        || database.indexOf('/') >= 0) {
      throw bad(uri, "database must be 1 to 63 characters without '/' or control characters; was '"
          + database + "'");
    }

    Map<String, String> params = new LinkedHashMap<>();
    if (query != null && !query.isEmpty()) {
      for (String pair : query.split("&", -1)) {
        int eq = pair.indexOf('=');
        String name = eq < 0 ? pair : pair.substring(0, eq);
        String value = eq < 0 ? "" : decode(uri, name, pair.substring(eq + 1));
        if ("password".equals(name)) {
          throw bad(uri, "password must not be in the URI; give password-file=FILE (or the"
              + " builder's password(...)), or let the driver read PGPASSFILE or ~/.pgpass");
        }
        if (!PARAMETERS.contains(name)) {
          throw bad(uri, "unknown parameter '" + name + "'; allowed: " + String.join(", ",
              new java.util.TreeSet<>(PARAMETERS)));
        }
        if (params.put(name, value) != null) {
          throw bad(uri, "parameter " + name + " is given twice");
        }
        if (value.isEmpty()) {
          throw bad(uri, name + " must not be empty");
        }
      }
    }

    String schema = params.getOrDefault("schema", DEFAULT_SCHEMA);
    if (!IDENTIFIER.matcher(schema).matches()) {
      throw bad(uri, "schema must be a lower-case SQL identifier ([a-z_][a-z0-9_]*, at most "
          + MAX_SCHEMA_LENGTH + " characters); was '" + schema + "'");
    }
    String user = params.get("user");
    if (user != null && (user.length() > 63 || user.chars().anyMatch(Character::isISOControl))) {
      throw bad(uri, "user must be 1 to 63 characters without control characters");
    }
    String sslMode = params.get("sslmode");
    if (sslMode != null && !SSL_MODES.contains(sslMode)) {
      throw bad(uri, "sslmode must be one of disable, allow, prefer, require, verify-ca,"
          + " verify-full; was '" + sslMode + "'");
    }
    boolean createSchema = true;
    String create = params.get("create-schema");
    if (create != null) {
      switch (create.toLowerCase(Locale.ROOT)) {
        case "true" -> createSchema = true;
        case "false" -> createSchema = false;
        default -> throw bad(uri, "create-schema must be true or false; was '" + create + "'");
      }
    }
    int connections = 2;
    String n = params.get("connections");
    if (n != null) {
      try {
        connections = Integer.parseInt(n);
      } catch (NumberFormatException e) {
        connections = -1;
      }
      if (connections < 1 || connections > MAX_CONNECTIONS) {
        throw bad(uri, "connections must be a whole number from 1 to " + MAX_CONNECTIONS
            + "; was '" + n + "'");
      }
    }
    return new PostgresUri(
        hosts,
        database,
        schema,
        user,
        path(uri, "password-file", params.get("password-file")),
        sslMode,
        path(uri, "sslrootcert", params.get("sslrootcert")),
        createSchema,
        connections);
  }

  private static String hostAndPort(String uri, String part) {
    String host = part;
    int port = DEFAULT_PORT;
    int colon = part.lastIndexOf(':');
    if (colon >= 0 && !part.endsWith("]")) {
      host = part.substring(0, colon);
      String p = part.substring(colon + 1);
      try {
        port = Integer.parseInt(p);
      } catch (NumberFormatException e) {
        port = -1;
      }
      if (port < 1 || port > 65535) {
        throw bad(uri, "port must be a number from 1 to 65535; was '" + p + "' in '" + part + "'");
      }
    }
    if (!HOST.matcher(host).matches()) {
      throw bad(uri, "host must be a host name, an IPv4 address or a bracketed IPv6 address;"
          + " was '" + host + "'");
    }
    return host + ":" + port;
  }

  private static Path path(String uri, String field, String value) {
    if (value == null) {
      return null;
    }
    if (value.chars().anyMatch(Character::isISOControl)) {
      throw bad(uri, field + " must be a file path without control characters");
    }
    try {
      return Path.of(value);
    } catch (java.nio.file.InvalidPathException e) {
      throw bad(uri, field + " is not a valid file path: " + e.getReason());
    }
  }

  private static String decode(String uri, String field, String value) {
    try {
      return UriEscapes.decode(value);
    } catch (IllegalArgumentException e) {
      throw bad(uri, field + ": " + e.getMessage());
    }
  }

  private static IllegalArgumentException bad(String uri, String what) {
    return new IllegalArgumentException(
        "PostgreSQL backend URI '" + BackendUris.redacted(uri) + "': " + what + " (form: " + FORM + ")");
  }

  /** {@return the JDBC URL of these hosts and database; every other setting goes in properties} */
  String jdbcUrl() {
    return "jdbc:postgresql://" + String.join(",", hosts) + "/" + UriEscapes.encode(database);
  }

  /** {@return the URI without secrets, in a stable form, as backends name themselves} */
  String canonical() {
    StringBuilder s = new StringBuilder("postgresql://").append(String.join(",", hosts)).append('/')
        .append(UriEscapes.encode(database)).append("?schema=").append(schema);
    if (user != null) {
      s.append("&user=").append(UriEscapes.encode(user));
    }
    return s.toString();
  }
}
