package io.leasehold.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.PutRequest;
import com.google.protobuf.ByteString;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code --max-connections} and {@code --max-connections-per-address} on a real node: connections
 * that never finish a handshake (raw TCP, what a flood of connections looks like) fill the caps;
 * the next one is closed as it is accepted, one from another address still gets in until the
 * total is reached, and the gRPC connection that was open all along is still served. Once a
 * connection closes, its place is free again.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@Tag("integration")
class ConnectionCapTest {

  private static final int MAX = 4;
  private static final int PER_ADDRESS = 3;

  private LocalCluster cluster;
  private ManagedChannel client;
  private final List<Socket> sockets = new ArrayList<>();

  @AfterEach
  void stop() throws IOException {
    for (Socket s : sockets) {
      s.close();
    }
    if (client != null) {
      client.shutdownNow();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void connectionsOverACapAreClosedAtOnceAndTheOpenOnesAreServed() throws Exception {
    Limits limits = Limits.DEFAULTS
        .withMaxConnections(MAX, PER_ADDRESS)
        // Half-made connections stay for the whole test: only the caps close them.
        .withConnections(Limits.DEFAULT_MAX_CONNECTION_AGE, Limits.MOST_HANDSHAKE_TIMEOUT);
    cluster = LocalCluster.start(1, 0, Files.createTempDirectory(Path.of("target"), "connection-cap-"), c -> c.withLimits(limits));
    cluster.awaitLeader(Duration.ofSeconds(60));
    CoreNode node = cluster.node(0).orElseThrow();
    Peer peer = cluster.peers().get(0);
    client = NettyChannelBuilder.forAddress(peer.host(), peer.clientPort()).usePlaintext().build();
    LeaseholdGrpc.LeaseholdBlockingStub stub = LeaseholdGrpc.newBlockingStub(client);
    put(stub, "before");
    assertThat(node.snapshot().clientConnections()).as("the well-behaved client's connection, and no other").isEqualTo(1);

    InetAddress here = InetAddress.getByName(peer.host());
    InetAddress elsewhere = InetAddress.getByName("127.0.0.2"); // any 127/8 address is this host
    Socket first = connect(peer, here);
    Socket second = connect(peer, here);
    assertThat(isOpen(first)).as("within both caps").isTrue();
    assertThat(isOpen(second)).as("within both caps").isTrue();
    awaitClosed(connect(peer, here), "a fourth from one address, over --max-connections-per-address 3");
    Socket fromElsewhere = connect(peer, elsewhere);
    assertThat(isOpen(fromElsewhere)).as("another address, the fourth in all").isTrue();
    awaitClosed(connect(peer, elsewhere), "a fifth in all, over --max-connections 4");
    assertThat(node.snapshot().clientConnectionsRefused()).isEqualTo(2);

    // The connection that was open all along is still served.
    put(stub, "while-full");
    assertThat(stub.get(GetRequest.newBuilder().setKey("while-full").build()).getKvsCount()).isEqualTo(1);

    // A place freed is taken again.
    first.close();
    await("a new connection from the address once one of its own closed")
        .atMost(Duration.ofSeconds(30))
        .until(() -> isOpen(connect(peer, here)));
    assertThat(isOpen(second)).as("untouched by all of it").isTrue();
    assertThat(isOpen(fromElsewhere)).as("untouched by all of it").isTrue();
  }

  private static void put(LeaseholdGrpc.LeaseholdBlockingStub stub, String key) {
    stub.withDeadlineAfter(10, TimeUnit.SECONDS)
        .put(PutRequest.newBuilder().setKey(key).setValue(ByteString.copyFromUtf8("v")).build());
  }

  private Socket connect(Peer peer, InetAddress from) throws IOException {
    Socket s = new Socket();
    sockets.add(s);
    s.bind(new InetSocketAddress(from, 0));
    s.connect(new InetSocketAddress(peer.host(), peer.clientPort()), 5_000);
    return s;
  }

  private static void awaitClosed(Socket s, String why) {
    await(why + " is closed by the node").atMost(Duration.ofSeconds(30)).until(() -> !isOpen(s));
  }

  /**
   * {@return whether the node keeps {@code s} open}: a read that waits means open (a node never
   * writes first on a connection that has not begun its handshake); the end of the stream or a
   * reset means the node closed it (at the accept, so a connection it kept open for a second
   * it keeps: nothing else closes it within the test's handshake timeout).
   */
  private static boolean isOpen(Socket s) throws IOException {
    s.setSoTimeout(1_000);
    InputStream in = s.getInputStream();
    try {
      return in.read() >= 0;
    } catch (SocketTimeoutException waiting) {
      return true;
    } catch (IOException reset) {
      return false;
    }
  }
}
