package io.leasehold.postgresql;

import io.leasehold.testkit.FileModes;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real PostgreSQL server for one test class: {@code initdb} into a fresh directory under {@code
 * target/postgres/}, then {@code pg_ctl start} on a free loopback port, with password (SCRAM)
 * authentication over TCP for the superuser {@value #ADMIN}. The server refuses to run as root:
 * when the tests run as root (CI does), every server command runs as the unprivileged user {@code
 * postgres} (the Debian package creates it) through {@code runuser}, and the directory is given to
 * it. Durability is off ({@code fsync}, {@code synchronous_commit}): these tests are about
 * ordering, not disks. Where the binaries are missing, starting fails with the install hint; the
 * tests never skip.
 */
final class PostgresServer implements AutoCloseable {

  static final String ADMIN = "lh_admin";

  static final String INSTALL_HINT =
      "PostgreSQL's server binaries (initdb, pg_ctl) were not found (looked at pg_config --bindir and"
          + " /usr/lib/postgresql/*/bin): install the Debian package with 'sudo apt-get install -y"
          + " postgresql' (./run-tests does this when it can)";

  private static final long TIMEOUT_SECONDS = 60;

  private final Path bin;
  private final Path dir;
  private final Path data;
  private final Path passwordFile;
  private final String password;
  private final boolean asPostgresUser;
  private int port;

  private PostgresServer(Path bin, Path dir, boolean asPostgresUser) {
    this.bin = bin;
    this.dir = dir;
    this.data = dir.resolve("data");
    this.passwordFile = dir.resolve("password");
    this.password = "pw-" + UUID.randomUUID();
    this.asPostgresUser = asPostgresUser;
  }

  /** Initialises a data directory and starts the server on a free port. */
  static PostgresServer start() {
    Path bin = binaries();
    boolean root = "root".equals(System.getProperty("user.name"));
    Path dir;
    try {
      Path base = Path.of(System.getProperty("user.dir"), "target", "postgres");
      Files.createDirectories(base);
      dir = Files.createDirectory(base.resolve(UUID.randomUUID().toString()));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    PostgresServer server = new PostgresServer(bin, dir, root);
    try {
      server.initdb();
      server.startOnFreePort();
      return server;
    } catch (RuntimeException | Error e) {
      server.close();
      throw e;
    }
  }

  private static Path binaries() {
    List<Path> candidates = new ArrayList<>();
    try {
      Process p = new ProcessBuilder("pg_config", "--bindir").redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      if (p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0) {
        candidates.add(Path.of(out));
      }
    } catch (IOException e) {
      // no pg_config: look in Debian's place
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    Path debian = Path.of("/usr/lib/postgresql");
    if (Files.isDirectory(debian)) {
      try (Stream<Path> versions = Files.list(debian)) {
        versions.sorted(Comparator.reverseOrder()).forEach(v -> candidates.add(v.resolve("bin")));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    for (Path c : candidates) {
      if (Files.isExecutable(c.resolve("initdb")) && Files.isExecutable(c.resolve("pg_ctl"))) {
        return c;
      }
    }
    throw new IllegalStateException(INSTALL_HINT);
  }

  private void initdb() {
    Path pwfile = dir.resolve("initdb-password");
    try {
      Files.writeString(pwfile, password + "\n");
      FileModes.ownerOnly(Files.writeString(passwordFile, password + "\n"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    giveToPostgres(dir);
    run(List.of(bin.resolve("initdb").toString(), "-D", data.toString(), "-U", ADMIN,
        "--pwfile=" + pwfile, "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8",
        "--no-locale", "--no-sync"));
  }

  private void startOnFreePort() {
    for (int attempt = 1; ; attempt++) {
      port = freePort();
      try {
        pgCtl("start", "-l", dir.resolve("server.log").toString(), "-o", options());
        return;
      } catch (IllegalStateException e) {
        // Another process may have taken the port between our probe and the server's bind.
        if (attempt == 3) {
          throw e;
        }
      }
    }
  }

  private String options() {
    return "-c port=" + port + " -c listen_addresses=127.0.0.1 -c unix_socket_directories=" + dir
        + " -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
        + " -c shared_buffers=32MB";
  }

  /** Stops the server (fast shutdown: sessions are cut) and starts it again on the same port. */
  void restart() {
    pgCtl("stop", "-m", "fast");
    pgCtl("start", "-l", dir.resolve("server.log").toString(), "-o", options());
  }

  /** Stops the server; the data stays for {@link #startAgain()}. */
  void stop() {
    pgCtl("stop", "-m", "fast");
  }

  /** Starts a stopped server again on its port. */
  void startAgain() {
    pgCtl("start", "-l", dir.resolve("server.log").toString(), "-o", options());
  }

  private void pgCtl(String command, String... args) {
    List<String> cmd = new ArrayList<>(List.of(bin.resolve("pg_ctl").toString(), command, "-D",
        data.toString(), "-w", "-t", Long.toString(TIMEOUT_SECONDS)));
    cmd.addAll(List.of(args));
    run(cmd);
  }

  private void run(List<String> command) {
    List<String> full = new ArrayList<>();
    if (asPostgresUser) {
      full.addAll(List.of("runuser", "-u", "postgres", "--"));
    }
    full.addAll(command);
    try {
      Process p = new ProcessBuilder(full).directory(dir.toFile()).redirectErrorStream(true)
          .redirectOutput(dir.resolve("commands.log").toFile().exists()
              ? ProcessBuilder.Redirect.appendTo(dir.resolve("commands.log").toFile())
              : ProcessBuilder.Redirect.to(dir.resolve("commands.log").toFile()))
          .start();
      if (!p.waitFor(TIMEOUT_SECONDS + 10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException(String.join(" ", full) + " did not finish; see " + dir);
      }
      if (p.exitValue() != 0) {
        throw new IllegalStateException(String.join(" ", full) + " failed with exit code "
            + p.exitValue() + ":\n" + tail(dir.resolve("commands.log")) + tail(dir.resolve("server.log")));
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot run " + full.get(0), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted running " + full, e);
    }
  }

  private static String tail(Path log) {
    try {
      if (!Files.exists(log)) {
        return "";
      }
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size())) + "\n";
    } catch (IOException e) {
      return "";
    }
  }

  private void giveToPostgres(Path path) {
    if (!asPostgresUser) {
      return;
    }
    try {
      Process p = new ProcessBuilder("chown", "-R", "postgres:postgres", path.toString())
          .redirectErrorStream(true).start();
      if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException("chown -R postgres " + path + " failed");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static int freePort() {
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress("127.0.0.1", 0));
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  int port() {
    return port;
  }

  InetSocketAddress address() {
    return new InetSocketAddress("127.0.0.1", port);
  }

  /** {@return the file that holds the superuser's password} */
  Path passwordFile() {
    return passwordFile;
  }

  /**
   * {@return a backend URI for this server's {@code postgres} database, through {@code port}}
   *
   * @param port the port to reach (the server's, or a proxy's in front of it)
   * @param extra more parameters, each {@code name=value}
   */
  String backendUri(int port, String... extra) {
    StringBuilder s = new StringBuilder("postgresql://127.0.0.1:" + port + "/postgres?user=" + ADMIN
        + "&password-file=" + passwordFile);
    for (String e : extra) {
      s.append('&').append(e);
    }
    return s.toString();
  }

  String backendUri() {
    return backendUri(port);
  }

  /** {@return a new superuser connection to {@code database}} */
  Connection admin(String database) throws SQLException {
    return DriverManager.getConnection(
        "jdbc:postgresql://127.0.0.1:" + port + "/" + database, ADMIN, password);
  }

  Connection admin() throws SQLException {
    return admin("postgres");
  }

  /** {@return the superuser's password, for psql's PGPASSWORD in tests} */
  String password() {
    return password;
  }

  Path psql() {
    Path p = bin.resolve("psql");
    return Files.isExecutable(p) ? p : Path.of("psql");
  }

  /** Stops the server at once and deletes its directory. */
  @Override
  public void close() {
    try {
      if (Files.exists(data.resolve("postmaster.pid"))) {
        pgCtl("stop", "-m", "immediate");
      }
    } catch (RuntimeException e) {
      // best effort: the directory goes anyway
    } finally {
      delete(dir.toFile());
    }
  }

  private static void delete(File f) {
    File[] children = f.listFiles();
    if (children != null) {
      for (File c : children) {
        delete(c);
      }
    }
    f.delete();
  }
}
