package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.leasehold.LeaseLost;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.core.proto.KeepAliveRequest;
import io.leasehold.core.proto.KeepAliveResponse;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.spi.VirtualClock;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * How a client tells a cluster restored from a backup (at the same addresses) from the one its
 * sessions belong to, whatever order the answers come in. A scripted core answers each call with
 * the cluster identity the test names, so that the shape no real cluster makes on demand is made
 * here every time: a keep-alive answered before the cluster had an identity, then the cluster
 * replaced before any other keep-alive was answered.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ClusterIdentityTest {

  private static final Duration TTL = Duration.ofSeconds(10);

  /** A core that grants sessions and confirms every keep-alive, naming the identity it is told. */
  private static final class ScriptedCore extends LeaseholdGrpc.LeaseholdImplBase {
    volatile String grantsAs = "";
    volatile String answersAs = "";
    final AtomicLong nextSession = new AtomicLong(7);

    @Override
    public void grant(GrantRequest request, StreamObserver<GrantResponse> out) {
      out.onNext(
          GrantResponse.newBuilder()
              .setSessionId(nextSession.getAndIncrement())
              .setTtlMillis(request.getTtlMillis())
              .setClusterId(grantsAs)
              .build());
      out.onCompleted();
    }

    @Override
    public StreamObserver<KeepAliveRequest> keepAlive(StreamObserver<KeepAliveResponse> out) {
      return new StreamObserver<>() {
        @Override
        public void onNext(KeepAliveRequest request) {
          // Every session named is alive: a restored cluster has the backup's sessions.
          out.onNext(
              KeepAliveResponse.newBuilder()
                  .setSequence(request.getSequence())
                  .addAllAlive(request.getSessionIdsList())
                  .setClusterId(answersAs)
                  .build());
        }

        @Override
        public void onError(Throwable t) {}

        @Override
        public void onCompleted() {
          out.onCompleted();
        }
      };
    }
  }

  private final ScriptedCore core = new ScriptedCore();
  private final VirtualClock clock = new VirtualClock();
  private final Map<Long, LeaseLost> ended = new ConcurrentHashMap<>();
  private Server server;
  private CoreClient client;
  private Sessions sessions;

  @BeforeEach
  void start() throws Exception {
    server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(core).build().start();
    client = new CoreClient(List.of(new InetSocketAddress("127.0.0.1", server.getPort())), Duration.ofSeconds(5));
    sessions = new Sessions(client, clock, clock, "holder", Duration.ofSeconds(5), () -> {}, ended::put, revoked -> {});
  }

  @AfterEach
  void stop() throws Exception {
    sessions.close();
    client.close();
    server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
  }

  @Test
  void aSessionOfTheClusterThatGrantedItEndsWhenAnotherAnswersEvenIfNoKeepAliveNamedTheFirst() throws Exception {
    // Granted by cluster A, whose first keep-alive answer came before A had its identity applied.
    core.grantsAs = "cluster-a";
    core.answersAs = "";
    Sessions.Session session = granted();
    assertThat(round(session)).as("A's answer without an identity confirms the session").isTrue();

    // A is replaced by B, restored from a backup that has the session: B answers it alive.
    core.answersAs = "cluster-b";
    assertThat(round(session)).as("B's \"alive\" is about B's history, not the session A granted").isFalse();
    await().until(() -> ended.containsKey(session.id)); // told after the round is settled
    assertThat(ended.get(session.id)).satisfies(lost -> {
      assertThat(lost.kind()).isEqualTo(LeaseLost.Kind.INCONSISTENT);
      assertThat(lost.detail()).contains("another cluster").contains("cluster-b").contains("cluster-a");
    });
  }

  @Test
  void aSessionGrantedByACoreThatNamesNoIdentityTakesTheFirstOneAKeepAliveNames() throws Exception {
    core.grantsAs = ""; // a core of a version whose grants name no cluster
    core.answersAs = "cluster-a";
    Sessions.Session session = granted();
    assertThat(round(session)).isTrue();
    assertThat(round(session)).isTrue();
    assertThat(ended).isEmpty();

    core.answersAs = "cluster-b";
    assertThat(round(session)).isFalse();
    await().until(() -> ended.containsKey(session.id));
    assertThat(ended.get(session.id).kind()).isEqualTo(LeaseLost.Kind.INCONSISTENT);
  }

  @Test
  void onlyTheSessionsOfTheOldClusterEndWhenTheNewOneGrantsBeforeItsFirstKeepAlive() throws Exception {
    core.grantsAs = "cluster-a";
    core.answersAs = "cluster-a";
    Sessions.Session old = granted();
    assertThat(round(old)).isTrue();

    // B (restored) grants a session for another TTL before any keep-alive reaches B.
    core.grantsAs = "cluster-b";
    core.answersAs = "cluster-b";
    Sessions.Session fresh = sessions.forTtl(TTL.multipliedBy(2)).get(10, TimeUnit.SECONDS);
    CompletableFuture<Boolean> freshAlive = sessions.confirm(fresh);
    assertThat(round(old)).as("A's session, answered by B").isFalse();
    assertThat(freshAlive.get(10, TimeUnit.SECONDS)).as("B's own session, confirmed in the same answer").isTrue();
    await().until(() -> ended.containsKey(old.id));
    assertThat(ended).containsOnlyKeys(old.id);
  }

  private Sessions.Session granted() throws Exception {
    Sessions.Session session = sessions.forTtl(TTL).get(10, TimeUnit.SECONDS);
    // The grant asks for a round at once: let it be sent and answered before the test's own.
    CompletableFuture<Boolean> first = session.nextRound.get();
    await().until(() -> {
      clock.advance(Duration.ZERO);
      return first.isDone();
    });
    assertThat(first.get()).isTrue();
    return session;
  }

  /** Sends one keep-alive round now, and {@return whether it confirmed {@code session} alive} */
  private boolean round(Sessions.Session session) throws Exception {
    CompletableFuture<Boolean> alive = sessions.confirm(session);
    clock.advance(Duration.ZERO);
    return alive.get(10, TimeUnit.SECONDS);
  }
}
