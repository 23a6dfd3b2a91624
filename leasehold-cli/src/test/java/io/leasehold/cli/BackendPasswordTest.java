package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A {@code --backend} URI with a password in it is refused as bad usage (exit 2) in one line that
 * shows the URI with the password hidden, by every command that takes one. Nothing is opened: the
 * URIs are refused by their parsers.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class BackendPasswordTest {

  static Stream<Arguments> commands() {
    List<List<String>> commands = List.of(
        List.of("run", "--lease", "x", "--ttl", "5s", "--", "true"),
        List.of("get", "x"),
        List.of("watch", "x"),
        List.of("status"),
        List.of("revoke", "x"),
        List.of("admin", "transfer-leader"));
    List<String> uris = List.of(
        "etcd://alice:hunter2@127.0.0.1:2379",
        "zookeeper://alice:hunter2@127.0.0.1:2181",
        "leasehold://alice:hunter2@127.0.0.1:7000",
        "postgresql://alice:hunter2@127.0.0.1/db");
    List<Arguments> cases = new ArrayList<>();
    for (List<String> command : commands) {
      for (String uri : uris) {
        List<String> args = new ArrayList<>(command);
        args.add(command.indexOf("--") < 0 ? args.size() : command.indexOf("--"), "--backend");
        args.add(args.indexOf("--backend") + 1, uri);
        cases.add(Arguments.of(args));
      }
    }
    return cases.stream();
  }

  @ParameterizedTest
  @MethodSource("commands")
  void thePasswordIsNotEchoed(List<String> args) {
    Cli cli = Cli.run(args.toArray(String[]::new));
    assertThat(cli.exitCode()).as("%s: %s", args, cli.err()).isEqualTo(2);
    assertThat(cli.err()).as("%s", args).doesNotContain("hunter2");
    if (!args.get(args.indexOf("--backend") + 1).startsWith("postgresql:")) {
      // Not on the CLI's class path: refused by its scheme, the URI not quoted.
      assertThat(cli.err()).as("%s", args).contains(":***@");
    }
    assertThat(cli.out()).as("%s", args).doesNotContain("hunter2");
  }
}
