package io.leasehold.server.edge;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.leasehold.core.proto.BatchOp;
import io.leasehold.core.proto.BatchRequest;
import io.leasehold.core.proto.BatchResponse;
import io.leasehold.core.proto.BatchResult;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.server.Limits;
import io.leasehold.server.raft.LeaderRefusals;
import io.leasehold.server.replicated.CoreState;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A node grants no session before it has applied its cluster's identity: the grant's answer is
 * how a client learns which cluster its session is of, and a session whose grant named none could
 * later be taken for one of a cluster restored from a backup at the same addresses. Both ways in
 * (a grant, a batch's grant op) are refused as retriable, before anything reaches the log (this
 * service has no log behind it: a write that got through would fail on the missing gateway).
 */
class GrantBeforeIdentityTest {

  private final CoreState state = new CoreState(); // a new cluster's, before its first leader's entry
  private final ClientService service =
      new ClientService(
          null,
          new LeaderRefusals(() -> false, state),
          null,
          null,
          null,
          null,
          new AccessControl(state, () -> null),
          0,
          new LimitChecks(Limits.DEFAULTS, state),
          state::clusterId);

  private static final GrantRequest GRANT =
      GrantRequest.newBuilder().setCall(CallId.newBuilder().setClientIdHigh(1).setCallId(1)).setOwner("o").setTtlMillis(10_000).build();

  @Test
  void aGrantIsRefusedAsRetriableWhileTheNodeKnowsNoClusterIdentity() throws Exception {
    Answer<GrantResponse> answer = new Answer<>();
    service.grant(GRANT, answer);
    Status status = Status.fromThrowable(answer.error.get(10, TimeUnit.SECONDS));
    assertThat(status.getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(status.getDescription()).contains("no cluster identity yet").contains("retry");
  }

  @Test
  void aBatchsGrantIsRefusedTheSameWay() throws Exception {
    Answer<BatchResponse> answer = new Answer<>();
    service.batch(BatchRequest.newBuilder().addOps(BatchOp.newBuilder().setGrant(GRANT)).build(), answer);
    BatchResult result = answer.value.get(10, TimeUnit.SECONDS).getResults(0);
    assertThat(result.getError().getCode()).isEqualTo(Status.Code.UNAVAILABLE.value());
    assertThat(result.getError().getMessage()).contains("no cluster identity yet");
  }

  @Test
  void withAnIdentityAGrantGetsPastTheCheck() {
    assertThat(ClientService.beforeIdentity("cluster-a")).isNull();
    assertThat(ClientService.beforeIdentity("")).isNotNull();
  }

  private static final class Answer<T> implements StreamObserver<T> {
    final CompletableFuture<T> value = new CompletableFuture<>();
    final CompletableFuture<Throwable> error = new CompletableFuture<>();

    @Override
    public void onNext(T v) {
      value.complete(v);
    }

    @Override
    public void onError(Throwable t) {
      error.complete(t);
    }

    @Override
    public void onCompleted() {}
  }
}
