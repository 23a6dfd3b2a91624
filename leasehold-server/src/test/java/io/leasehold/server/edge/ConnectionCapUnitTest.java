package io.leasehold.server.edge;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import org.junit.jupiter.api.Test;

/** The caps' counting and the start-up check of the file-descriptor limit, without a node. */
class ConnectionCapUnitTest {

  @Test
  void eachCapCountsAndAClosedConnectionFreesItsPlace() throws Exception {
    ConnectionCap cap = new ConnectionCap(3, 2);
    InetAddress a = InetAddress.getByName("10.0.0.1");
    InetAddress b = InetAddress.getByName("10.0.0.2");
    assertThat(cap.admit(a)).isNull();
    assertThat(cap.admit(a)).isNull();
    assertThat(cap.admit(a)).isEqualTo("2 connections are open from 10.0.0.1, the most --max-connections-per-address allows");
    assertThat(cap.admit(b)).isNull();
    assertThat(cap.admit(b)).isEqualTo("3 connections are open, the most --max-connections allows");
    assertThat(cap.open()).as("a refused connection is not counted").isEqualTo(3);
    cap.leave(a);
    assertThat(cap.admit(b)).as("the place a closed connection freed").isNull();
    assertThat(cap.admit(a)).as("all three places taken again").isEqualTo("3 connections are open, the most --max-connections allows");
  }

  @Test
  void aDescriptorLimitBelowTheCapIsNamedWithItsFixes() {
    assertThat(ConnectionCap.descriptorShortfall(10_000, 1_048_576)).isNull();
    assertThat(ConnectionCap.descriptorShortfall(10_000, -1)).as("a platform that does not say").isNull();
    assertThat(ConnectionCap.descriptorShortfall(10_000, 4_096))
        .contains("4096 files, fewer than --max-connections 10000")
        .contains("ulimit -n")
        .contains("lower --max-connections");
  }
}
