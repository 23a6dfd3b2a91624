package io.leasehold.server;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.leasehold.core.proto.LeaseholdGrpc;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

/**
 * A real one-node core for tests that talk to a node through its client protocol: started under
 * {@code target/}, led by its only node, with one plaintext connection to it.
 */
public final class OneNodeCore implements AutoCloseable {

  private final LocalCluster cluster;
  private final ManagedChannel channel;

  private OneNodeCore(LocalCluster cluster, ManagedChannel channel) {
    this.cluster = cluster;
    this.channel = channel;
  }

  /**
   * @param dirPrefix the prefix of its data directory under {@code target/}
   * @param tuning changes to the node's default configuration
   */
  public static OneNodeCore start(String dirPrefix, UnaryOperator<NodeConfig> tuning) throws IOException {
    LocalCluster cluster = LocalCluster.start(1, 0, Files.createTempDirectory(Path.of("target"), dirPrefix), tuning);
    cluster.awaitLeader(Duration.ofSeconds(60));
    Peer node = cluster.peers().get(0);
    return new OneNodeCore(cluster, NettyChannelBuilder.forAddress(node.host(), node.clientPort()).usePlaintext().build());
  }

  /** {@return a blocking stub on the connection, with a 60 s deadline} */
  public LeaseholdGrpc.LeaseholdBlockingStub stub() {
    return LeaseholdGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
  }

  /** {@return the connection, for streaming and asynchronous stubs} */
  ManagedChannel channel() {
    return channel;
  }

  /** {@return the writes the node sent to its log so far} */
  public long writes() {
    return cluster.node(0).orElseThrow().snapshot().writes();
  }

  /** {@return the data bytes the node's replica holds ({@code --max-data-bytes} counts them)} */
  public long dataBytes() {
    return cluster.node(0).orElseThrow().snapshot().dataBytes();
  }

  @Override
  public void close() {
    channel.shutdownNow();
    cluster.close();
  }
}
