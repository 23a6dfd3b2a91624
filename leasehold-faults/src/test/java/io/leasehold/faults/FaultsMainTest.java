package io.leasehold.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/** Bad options end with status 2 and a message naming the option, the range and the value. */
@Timeout(30)
class FaultsMainTest {

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
    "--duration=5s|--duration must be between 10s and 24h; was 5s",
    "--duration=soon|--duration: 'soon' is not a duration; write a number and a unit",
    "--ttl=100ms|--ttl must be between 500ms and 1m; was 100ms",
    "--clients=1|--clients must be between 2 and 16; was 1",
    "--lease-backend=memory:|--lease-backend memory: is a store inside one process",
  })
  void badOptionsAreRejectedWithStatus2(String option, String message) {
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(new FaultsMain());
    cl.setErr(new PrintWriter(err));
    cl.setOut(new PrintWriter(new StringWriter()));
    assertThat(cl.execute(option)).isEqualTo(2);
    assertThat(err.toString()).contains(message);
  }

  @Test
  void backendEndpointsAreRoutedThroughTheClientsLinks() {
    java.util.List<Link> links = new java.util.ArrayList<>();
    try {
      String uri = Harness.proxied("c1", "etcd://127.0.0.1:2379,127.0.0.1:2381/", links);
      assertThat(links).hasSize(2);
      assertThat(uri).isEqualTo("etcd://127.0.0.1:" + links.get(0).port() + ",127.0.0.1:" + links.get(1).port() + "/");
      assertThat(Harness.proxied("c1", "kubernetes:?namespace=x", links)).isEqualTo("kubernetes:?namespace=x");
    } finally {
      links.forEach(Link::close);
    }
  }
}
