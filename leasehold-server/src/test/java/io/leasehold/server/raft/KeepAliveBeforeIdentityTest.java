package io.leasehold.server.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.core.proto.KeepAliveRequest;
import io.leasehold.core.proto.KeepAliveResponse;
import io.leasehold.server.CoreNode;
import io.leasehold.server.LocalCluster;
import io.leasehold.server.state.Query;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.thirdparty.com.google.protobuf.UnsafeByteOperations;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A leader confirms no keep-alive while its state has no cluster identity (a moment after a new
 * or restored cluster's first election): a client tells a cluster restored from a backup at the
 * same addresses by the identity its answers name, and an "alive" naming none could be either.
 * The state is made identity-less here as a restore leaves it, on a node that leads already.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@Tag("integration")
class KeepAliveBeforeIdentityTest {

  private LocalCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void aKeepAliveIsNotConfirmedWhileTheStateHasNoClusterIdentity() throws Exception {
    cluster = LocalCluster.start(1, 0, Files.createTempDirectory(Path.of("target"), "keep-alive-identity-"), c -> c);
    CoreNode node = cluster.node(cluster.awaitLeader(Duration.ofSeconds(60))).orElseThrow();

    KeepAliveResponse answered = KeepAliveResponse.parseFrom(keepAlive(node).getContent().toByteArray());
    assertThat(answered.getClusterId()).as("with an identity, the answer names it").isNotEmpty();

    node.stateMachine().state().markRestored(); // as a restore leaves the state, before its first leader's entry
    assertThatThrownBy(() -> keepAlive(node))
        .hasMessageContaining("the cluster has no identity yet")
        .hasMessageContaining("no keep-alive is confirmed before it");
  }

  private static Message keepAlive(CoreNode node) throws Exception {
    Query query = Query.newBuilder().setKeepAlive(KeepAliveRequest.newBuilder().setSequence(1)).setIdentity("").build();
    return node.stateMachine().query(Message.valueOf(UnsafeByteOperations.unsafeWrap(query.toByteArray()))).get(30, TimeUnit.SECONDS);
  }
}
