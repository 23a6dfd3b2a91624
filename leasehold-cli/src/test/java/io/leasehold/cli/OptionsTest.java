package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The command line's options and exit codes; nothing here runs a demo. */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
class OptionsTest {

  @ParameterizedTest(name = "{0} {1} -> {2}")
  @CsvSource(
      delimiter = '|',
      value = {
        "demo | --contenders=1     | --contenders must be between 2 and 9; was 1",
        "demo | --contenders=10    | --contenders must be between 2 and 9; was 10",
        "demo | --ttl=10ms         | --ttl must be between 200ms and 1m; was 10ms",
        "demo | --ttl=2m           | --ttl must be between 200ms and 1m; was 2m",
        "demo | --duration=1s      | --duration must be between 2s and 1h; was 1s",
        "demo | --duration=5s      | --duration must be at least 3 times --ttl (6s with --ttl 2s)",
        "demo | --ttl=2x           | Invalid value for option '--ttl': '2x' is not a duration",
        "demo | --duration=15      | Invalid value for option '--duration': '15' is not a duration",
        "demo | --contenders=three | Invalid value for option '--contenders'",
        "dev  | --nodes=0          | --nodes must be between 1 and 9; was 0",
        "dev  | --nodes=10         | --nodes must be between 1 and 9; was 10",
        "dev  | --port=65535       | --port must be 0 (free ports) or between 1 and 65530 with 3 nodes; was 65535",
        "dev  | --port=-1          | --port must be 0 (free ports) or between 1 and 65530 with 3 nodes; was -1",
        "dev  | --duration=500ms   | --duration must be between 1s and 24h; was 500ms",
        "dev  | --duration=soon    | Invalid value for option '--duration': 'soon' is not a duration",
        "dev  | --ttl=2s           | Unknown option: '--ttl=2s'",
        "status | --backend=memory: | --backend must be a core URI, leasehold://host:port,host:port,... or leaseholds://host:port,...?ca=FILE&cert=FILE&key=FILE (status works on the consistent core only): a core URI looks like",
        "status | --backend=leasehold://h:99999 | --backend must be a core URI, leasehold://host:port,host:port,... or leaseholds://host:port,...?ca=FILE&cert=FILE&key=FILE (status works on the consistent core only): port of 'h:99999' must be between 1 and 65535; was 99999",
        "status | --timeout=10ms    | --timeout must be between 100ms and 1m; was 10ms",
      })
  void aBadValueIsABadUsageThatNamesTheOption(String command, String option, String message) {
    Cli run = Cli.run(command, option);

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err())
        .contains(message)
        .contains("Try 'leasehold " + command + " --help' for more information.");
    assertThat(run.out()).isEmpty();
  }

  @ParameterizedTest(name = "server {0} -> {1}")
  @CsvSource(
      delimiter = '|',
      value = {
        "--id n4 --peers n1=127.0.0.1:7000,n2=127.0.0.1:7002 | --id must be one of the ids in --peers (n1, n2); was 'n4'",
        "--id n1 --peers n1=127.0.0.1                        | --peers is not valid: peers must look like id=host:port,id=host:port; \"n1=127.0.0.1\" does not (was 'n1=127.0.0.1')",
        "--id n1 --peers n1=127.0.0.1:65535                  | --peers is not valid: port of node n1 must be between 1 and 65534 (the next port is its Raft port); was 65535",
        "--id n1 --peers n1=a:1,n1=b:1                       | --peers is not valid: node id n1 appears twice in the peers",
        "--id 'n 1' --peers 'n 1=a:1'                        | --peers is not valid: node id must be 1 to 64 letters, digits, '-' or '_'; was \"n 1\"",
        "--id n1 --peers n1=a:1 --election-timeout 10ms      | --election-timeout must be between 50ms and 1m; was 10ms",
        "--id n1 --peers n1=a:1 --election-timeout 2m        | --election-timeout must be between 50ms and 1m; was 2m",
        "--id n1 --peers n1=a:1 --snapshot-every 5           | --snapshot-every must be at least 10; was 5",
        "--id n1 --peers n1=a:1 --join --bootstrap           | --bootstrap (the first start of a new cluster) and --join (a node added to a running one) exclude each other",
      })
  void aBadServerOptionIsABadUsageThatNamesIt(String options, String message) {
    List<String> args = new ArrayList<>(List.of("server", "--data-dir", "target/never-created"));
    Matcher m = Pattern.compile("'([^']*)'|(\\S+)").matcher(options);
    while (m.find()) {
      args.add(m.group(1) != null ? m.group(1) : m.group(2));
    }

    Cli run = Cli.run(args.toArray(String[]::new));

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err()).contains(message).contains("Try 'leasehold server --help' for more information.");
    assertThat(Path.of("target/never-created")).doesNotExist();
  }

  @Test
  void serverNeedsItsThreeOptions() {
    Cli run = Cli.run("server", "--id", "n1");

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err()).contains("Missing required options: '--peers=ID=HOST:PORT,...', '--data-dir=DIR'");
  }

  @Test
  void serverRefusesADataDirThatIsAFile() {
    Cli run = Cli.run("server", "--id", "n1", "--peers", "n1=127.0.0.1:7000", "--data-dir", "pom.xml");

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err()).contains("--data-dir must be a directory; pom.xml is a file");
  }

  @Test
  void anUnknownOptionIsABadUsage() {
    Cli run = Cli.run("demo", "--contendres=3");

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err()).contains("Unknown option: '--contendres=3'");
  }

  @Test
  void anUnknownCommandIsABadUsage() {
    Cli run = Cli.run("dmeo");

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err())
        .contains("leasehold: 'dmeo' is not a command; the commands are dev, server, status, revoke, admin, acl, get, watch, members, run,"
            + " demo, help (and bench, faults, micro through ./leasehold)")
        .doesNotContain("Did you mean")
        .contains("Try 'leasehold --help' for more information.");
  }

  @Test
  void noCommandIsABadUsageNamingTheCommands() {
    Cli run = Cli.run();

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err())
        .contains("leasehold: a command is needed: one of dev, server, status, revoke, admin, acl, get, watch, members, run, demo, help")
        .contains("Try 'leasehold --help' for more information.");
  }

  @Test
  void helpAndVersionSucceed() {
    Cli help = Cli.run("--help");
    Cli demoHelp = Cli.run("demo", "--help");
    Cli version = Cli.run("--version");

    assertThat(help.exitCode()).isZero();
    assertThat(help.out()).contains("Usage: leasehold").contains("--verbose");
    assertThat(demoHelp.exitCode()).isZero();
    assertThat(demoHelp.out()).contains("--contenders=N", "--ttl=DURATION", "--duration", "--seed");
    assertThat(version.exitCode()).isZero();
    assertThat(version.out().strip()).matches("leasehold \\d+\\.\\d+\\.\\d+.*");
  }
}
