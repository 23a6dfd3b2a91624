package io.leasehold.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/** Bad options end with status 2 and a message naming the option, the range and the value. */
@Timeout(30)
@Tag("integration")
class FaultsMainTest {

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
    "--duration=5s|--duration must be between 10s and 24h; was 5s",
    "--duration=soon|--duration: 'soon' is not a duration; write a number and a unit",
    "--ttl=100ms|--ttl must be between 500ms and 1m; was 100ms",
    "--clients=1|--clients must be between 2 and 16; was 1",
    "--lease-backend=memory:|--lease-backend memory: is a store inside one process",
    "--lease-backend=consul|--lease-backend must be etcd, zookeeper, core or a backend URI; was 'consul'",
    "--lease-backend=nosuch://x|--lease-backend: 'nosuch:' is not a backend's scheme; use one of leasehold://",
    "--lease-backend=etcd://x|--lease-backend: 'x' in 'etcd://x' is not host:port",
    "--lease-backend=zookeeper://h:99999|--lease-backend: 'h:99999' in 'zookeeper://h:99999' is not host:port",
    "--leases=0|--leases must be between 1 and 16; was 0",
    "--faults=kill-node,meteor|--faults: 'meteor' is not a fault type; the types are kill-node, pause-node,",
    "--faults=meteor|membership-change, late-copy",
    "--faults=late-copy --lease-backend=etcd|--faults: late-copy is offered only with the managed core as the lease store",
    "--max-clock-drift=0.7|--max-clock-drift must be between 0 and 0.5; was 0.7",
    "--clock-skew=-0.1|--clock-skew must be between 0 and 0.5; was -0.1",
  })
  void badOptionsAreRejectedWithStatus2(String option, String message) {
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(new FaultsMain());
    cl.setErr(new PrintWriter(err));
    cl.setOut(new PrintWriter(new StringWriter()));
    assertThat(cl.execute(option.split(" "))).isEqualTo(2);
    assertThat(err.toString()).contains(message);
  }

  /** A bad option is its message and a pointer to --help, not the whole usage. */
  @Test
  void aBadOptionIsNotFollowedByTheWholeUsage() {
    StringWriter err = new StringWriter();
    CommandLine cl = FaultsMain.commandLine();
    cl.setErr(new PrintWriter(err));
    cl.setOut(new PrintWriter(new StringWriter()));

    assertThat(cl.execute("--clients=1")).isEqualTo(2);
    assertThat(err.toString())
        .contains("--clients must be between 2 and 16; was 1")
        .contains("Try 'leasehold faults --help' for more information.")
        .doesNotContain("Usage:");
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
    "--runs=0|--runs must be between 1 and 1000; was 0",
    "--leases=17|--leases must be between 1 and 16; was 17",
  })
  void badSoakOptionsAreRejectedWithStatus2(String option, String message) {
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(new FaultsMain());
    cl.setErr(new PrintWriter(err));
    cl.setOut(new PrintWriter(new StringWriter()));
    assertThat(cl.execute("soak", option)).isEqualTo(2);
    assertThat(err.toString()).contains(message);
  }

  @Test
  void faultTypesAreNamedInLowerCaseWithDashes() {
    RunOptions o = new RunOptions();
    o.duration = "1m";
    o.clients = 2;
    o.leases = 1;
    o.ttl = "2s";
    o.maxClockDrift = 0.01;
    o.faults = java.util.Set.of("operator-delete", "PAUSE_LEADER_LONG");
    CommandLine cl = new CommandLine(new FaultsMain());
    Harness.Options h = o.toOptions(cl.getCommandSpec(), 1, java.nio.file.Path.of("x"));
    assertThat(h.faults()).containsExactlyInAnyOrder(FaultType.OPERATOR_DELETE, FaultType.PAUSE_LEADER_LONG);
    assertThat(h.clockSkew()).isEqualTo(0.01); // defaults to the drift bound
  }

  @Test
  void backendEndpointsAreRoutedThroughTheClientsLinks() {
    java.util.List<ProxyLink> links = new java.util.ArrayList<>();
    try {
      String uri = Harness.proxied("c1", "etcd://127.0.0.1:2379,127.0.0.1:2381/", links);
      assertThat(links).hasSize(2);
      assertThat(uri).isEqualTo("etcd://127.0.0.1:" + links.get(0).port() + ",127.0.0.1:" + links.get(1).port() + "/");
      assertThat(Harness.proxied("c1", "kubernetes:?namespace=x", links)).isEqualTo("kubernetes:?namespace=x");
    } finally {
      links.forEach(ProxyLink::close);
    }
  }
}
