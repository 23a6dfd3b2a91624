package io.leasehold.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.CompareAndSetRequest;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.ReleaseRequest;
import io.leasehold.core.proto.Tenure;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code --max-data-bytes} on a real node: puts go until the state holds the quota, then every
 * write that adds data is refused with {@code RESOURCE_EXHAUSTED} naming the flag, its value and
 * the state's size, while a release, a delete, a keep-alive and reads still work; once deletes
 * made room, puts go again.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@Tag("integration")
class DataQuotaTest {

  private static final long QUOTA = Limits.LEAST_DATA_BYTES;
  /** A quarter of the quota: the fifth such put is over it. */
  private static final ByteString VALUE = ByteString.copyFrom(new byte[(int) (QUOTA / 4)]);

  private static OneNodeCore core;

  @BeforeAll
  static void startNode() throws Exception {
    core = OneNodeCore.start("data-quota-", c -> c.withLimits(Limits.DEFAULTS.withMaxDataBytes(QUOTA)));
  }

  @AfterAll
  static void stopNode() {
    if (core != null) {
      core.close();
    }
  }

  private static void assertRefused(Runnable write) {
    assertThatThrownBy(write::run).isInstanceOfSatisfying(StatusRuntimeException.class, DataQuotaTest::isTheQuotasRefusal);
  }

  private static void isTheQuotasRefusal(StatusRuntimeException e) {
    assertThat(e.getStatus().getCode()).as("%s", e.getStatus()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(e.getStatus().getDescription())
        .matches("the replicated state holds \\d+ bytes of data and call records, at or over --max-data-bytes " + QUOTA + ": .*")
        .endsWith("; nothing was written");
  }

  @Test
  void writesThatAddDataAreRefusedAtTheQuotaAndTheClusterCanBeDrained() {
    LeaseholdGrpc.LeaseholdBlockingStub s = core.stub();
    long session = s.grant(GrantRequest.newBuilder().setOwner("o").setTtlMillis(60_000).build()).getSessionId();
    AcquireResponse held =
        s.acquire(AcquireRequest.newBuilder().setName("job").setHolder("h#1").setRequestId(1).setSessionId(session).build());
    assertThat(held.getAcquired()).isTrue();

    int puts = 0;
    StatusRuntimeException refused = null;
    while (refused == null && puts < 10) {
      try {
        s.put(PutRequest.newBuilder().setKey("big/" + puts).setValue(VALUE).build());
        puts++;
      } catch (StatusRuntimeException e) {
        refused = e;
      }
    }
    assertThat(puts).as("puts of a quarter of the quota each before one is refused").isEqualTo(4);
    assertThat(refused).isNotNull();
    isTheQuotasRefusal(refused);
    assertThat(refused.getStatus().getDescription()).as("the size named").contains("holds " + dataBytes() + " bytes");

    // Every write that adds data is refused.
    assertRefused(() -> s.put(PutRequest.newBuilder().setKey("small").build()));
    assertRefused(() -> s.compareAndSet(CompareAndSetRequest.newBuilder().setKey("small").build()));
    assertRefused(() -> s.grant(GrantRequest.newBuilder().setOwner("o").setTtlMillis(60_000).build()));
    assertRefused(
        () -> s.acquire(AcquireRequest.newBuilder().setName("new").setHolder("h#1").setRequestId(2).setSessionId(session).build()));
    assertRefused(
        () -> s.put(PutRequest.newBuilder().setKey("x")
            .setTenure(Tenure.newBuilder().setName("job").setHolder("h#1").setToken(held.getToken())).build()));
    // A retry of the tenure adds nothing: it goes, and answers the same tenure.
    assertThat(s.acquire(AcquireRequest.newBuilder().setName("job").setHolder("h#1").setRequestId(1).setSessionId(session).build())
            .getToken())
        .isEqualTo(held.getToken());

    // Reads, a release and deletes still work.
    assertThat(s.get(GetRequest.newBuilder().setKey("big/0").build()).getKvsCount()).isEqualTo(1);
    assertThat(s.release(ReleaseRequest.newBuilder().setName("job").setHolder("h#1").setToken(held.getToken()).build()).getReleased())
        .isTrue();
    assertThat(s.delete(DeleteRequest.newBuilder().setKey("big/0").build()).getDeleted()).isTrue();
    assertThat(s.delete(DeleteRequest.newBuilder().setKey("big/1").build()).getDeleted()).isTrue();

    // Below the quota again: puts go.
    s.put(PutRequest.newBuilder().setKey("big/again").setValue(VALUE).build());
    assertThat(s.get(GetRequest.newBuilder().setKey("big/again").build()).getKvsCount()).isEqualTo(1);
  }

  private static long dataBytes() {
    return core.dataBytes();
  }
}
