package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * How a client takes a new membership ({@link CoreClient#useMembers}), without a cluster: channels
 * are lazy, so no node needs to run.
 */
class CoreClientMembersTest {

  private static InetSocketAddress node(int port) {
    return InetSocketAddress.createUnresolved("127.0.0.1", port);
  }

  @Test
  void aNewMembershipReplacesTheNodesAndKeepsTheNodeInUse() {
    try (CoreClient client = new CoreClient(List.of(node(7000), node(7002)), Duration.ofSeconds(1))) {
      client.failOver(); // now on 7002
      assertThat(client.useMembers(List.of(node(7004), node(7002), node(7000)))).isTrue();
      assertThat(client.endpoints()).containsExactly(node(7004), node(7002), node(7000));
      assertThat(client.endpoints().get(client.currentNode())).as("still the node in use").isEqualTo(node(7002));

      assertThat(client.useMembers(List.of(node(7004), node(7002), node(7000)))).as("the same again").isFalse();
      assertThat(client.useMembers(List.of())).as("an empty answer").isFalse();
      assertThat(client.endpoints()).hasSize(3);
    }
  }

  @Test
  void aClientThatKnowsNoneOfTheMembersAddressesKeepsItsOwn() {
    // It reaches the nodes through a proxy or port forwarding: the members' own addresses would
    // not reach them from here.
    try (CoreClient client = new CoreClient(List.of(node(17000)), Duration.ofSeconds(1))) {
      assertThat(client.useMembers(List.of(node(7000), node(7002), node(7004)))).isFalse();
      assertThat(client.endpoints()).containsExactly(node(17000));
    }
  }

  @Test
  void aClosedClientTakesNoNewMembership() {
    CoreClient client = new CoreClient(List.of(node(7000)), Duration.ofSeconds(1));
    client.close();
    assertThat(client.useMembers(List.of(node(7000), node(7002)))).isFalse();
    assertThat(client.endpoints()).containsExactly(node(7000));
  }
}
