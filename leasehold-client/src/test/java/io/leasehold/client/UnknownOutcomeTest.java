package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.leasehold.LeaseTimeoutException;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall.SimpleForwardingClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.BatchOp;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.PutResponse;
import io.leasehold.core.proto.ReleaseRequest;
import io.leasehold.core.proto.ReleaseResponse;
import io.leasehold.server.replicated.CoreState;
import io.leasehold.server.LocalCluster;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Copies of a write whose first attempt went unanswered. A copy of a write the core applied but
 * whose reply it no longer keeps is answered "too late": the core cannot tell the copy's outcome.
 * The client must report that as unknown (a timeout the caller retries or gives up on), never as
 * a refusal that says nothing was written. And a first attempt that reaches the log after its
 * retry was refused gets that refusal, not the name.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@Tag("integration")
class UnknownOutcomeTest {

  private static LocalCluster cluster;

  @BeforeAll
  static void startNode() throws Exception {
    cluster = LocalCluster.start(1, 0, Files.createTempDirectory(Path.of("target"), "unknown-outcome-"), c -> c);
    cluster.awaitLeader(Duration.ofSeconds(60));
  }

  @AfterAll
  static void stopNode() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static BatchOp put(CallId call, String key) {
    return BatchOp.newBuilder()
        .setPut(PutRequest.newBuilder().setCall(call).setKey(key).setValue(ByteString.copyFromUtf8("v")))
        .build();
  }

  @Test
  void aCopyOfAnAppliedWriteWhoseReplyTheCoreDroppedIsAnUnknownOutcome() {
    try (CoreClient client = new CoreClient(CoreBackendProvider.target(cluster.uri()), Duration.ofSeconds(5))) {
      CallId first = client.newCall();
      client.batched(put(first, "unknown-outcome/first"), PutResponse.parser()).join();
      List<CompletableFuture<PutResponse>> later = new ArrayList<>();
      for (int i = 0; i <= CoreState.REPLIES_KEPT_PER_CLIENT; i++) {
        later.add(client.batched(put(client.newCall(), "unknown-outcome/" + i), PutResponse.parser()));
      }
      later.forEach(CompletableFuture::join);

      // The first write's reply was lost, say, and the caller sends it again, long after.
      CompletableFuture<PutResponse> again = client.batched(put(first, "unknown-outcome/first"), PutResponse.parser());

      assertThatThrownBy(again::join)
          .hasCauseInstanceOf(LeaseTimeoutException.class)
          .hasMessageContaining("cannot tell whether it applied");
      assertThat(later).allSatisfy(f -> assertThat(f).isCompleted());
    }
  }

  /**
   * The contender's first attempt is held up on its way (here: its node never answers), the
   * client retries, and the leader finds the name held. Were that retry refused from the leader's
   * state, nothing in the log would remember the call; the first attempt, reaching the log once
   * the name is free, would then take it for a holder that was told no, and the tenure would live
   * as long as the contender's session, held by nobody.
   */
  @Test
  void aFirstAttemptReachingTheLogAfterItsRetryWasRefusedIsRefusedToo() {
    String name = "retried-refusal";
    List<InetSocketAddress> endpoints = CoreBackendProvider.target(cluster.uri()).endpoints();
    FirstAcquireUnanswered firstUnanswered = new FirstAcquireUnanswered();
    try (CoreClient holder = new CoreClient(endpoints, Duration.ofSeconds(5));
        CoreClient contender = new CoreClient(endpoints, Duration.ofSeconds(5), List.of(firstUnanswered))) {
      long holderSession = session(holder);
      AcquireResponse held = holder.<AcquireResponse>call(
          (stub, out) -> stub.acquire(acquire(holder.newCall(), name, "holder#1", holderSession), out)).join();
      assertThat(held.getAcquired()).isTrue();

      AcquireRequest asked = acquire(contender.newCall(), name, "contender#1", session(contender));
      AcquireResponse refused = contender.<AcquireResponse>call((stub, out) -> stub.acquire(asked, out)).join();
      assertThat(refused.getAcquired()).isFalse();
      assertThat(firstUnanswered.attempts).as("the attempt header of each Acquire call sent").containsExactly("none", "2");

      holder.<ReleaseResponse>call(
          (stub, out) -> stub.release(
              ReleaseRequest.newBuilder().setCall(holder.newCall()).setName(name).setHolder("holder#1")
                  .setToken(held.getToken()).build(), out)).join();
      // The first attempt reaches the core now, as it would from a node that held it up.
      AcquireResponse late = contender.<AcquireResponse>call((stub, out) -> stub.acquire(asked, out)).join();

      assertThat(late.getAcquired())
          .as("a late first attempt of a call whose retry was refused took the name")
          .isFalse();
    }
  }

  private static long session(CoreClient client) {
    GrantRequest grant = GrantRequest.newBuilder().setCall(client.newCall()).setOwner("test").setTtlMillis(30_000).build();
    return client.<GrantResponse>call((stub, out) -> stub.grant(grant, out)).join().getSessionId();
  }

  private static AcquireRequest acquire(CallId call, String name, String holder, long session) {
    return AcquireRequest.newBuilder()
        .setCall(call).setName(name).setHolder(holder).setRequestId(1).setSessionId(session).build();
  }

  /**
   * Fails the first Acquire call as an unreachable node would, before anything is sent, and
   * records the attempt header of every Acquire call ("none" when it has none).
   */
  private static final class FirstAcquireUnanswered implements ClientInterceptor {
    private static final Metadata.Key<String> ATTEMPT =
        Metadata.Key.of(CoreClient.ATTEMPT_HEADER_NAME, Metadata.ASCII_STRING_MARSHALLER);
    final List<String> attempts = new CopyOnWriteArrayList<>();

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
      ClientCall<Q, R> call = next.newCall(method, options);
      if (!method.getBareMethodName().equals("Acquire")) {
        return call;
      }
      boolean first = attempts.isEmpty();
      return new SimpleForwardingClientCall<>(call) {
        @Override
        public void start(Listener<R> listener, Metadata headers) {
          String attempt = headers.get(ATTEMPT);
          attempts.add(attempt == null ? "none" : attempt);
          if (first) {
            listener.onClose(Status.UNAVAILABLE.withDescription("held up on its way"), new Metadata());
          } else {
            super.start(listener, headers);
          }
        }

        @Override
        public void request(int n) {
          if (!first) {
            super.request(n);
          }
        }

        @Override
        public void sendMessage(Q message) {
          if (!first) {
            super.sendMessage(message);
          }
        }

        @Override
        public void halfClose() {
          if (!first) {
            super.halfClose();
          }
        }
      };
    }
  }
}
