package io.leasehold.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.Tenure;
import io.leasehold.server.replicated.CoreState;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Keys attached to a tenure belong to no session, so {@code --max-keys-per-session} did not bound
 * them: a holder could attach keys without end (only the data quota stopped it). A tenure now may
 * have as many attached keys as a session may have keys; one more is refused with
 * {@code RESOURCE_EXHAUSTED} naming the flag, and nothing is written, while rewriting an attached
 * key, and attaching to another tenure, still go.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@Tag("integration")
class AttachedKeysLimitTest {

  private static final int MAX = 3;
  private static OneNodeCore core;

  @BeforeAll
  static void startNode() throws Exception {
    core = OneNodeCore.start("attached-limit-", c -> c.withLimits(Limits.DEFAULTS.withMaxKeysPerSession(MAX)));
  }

  @AfterAll
  static void stopNode() {
    if (core != null) {
      core.close();
    }
  }

  @Test
  void aTenureHoldsAtMostTheSessionLimitOfAttachedKeys() {
    LeaseholdGrpc.LeaseholdBlockingStub s = core.stub();
    Tenure job = acquire(s, "job");
    // A lease whose name continues the first's: its attached keys are not the first's.
    Tenure nested = acquire(s, "job/part");
    for (int i = 0; i < MAX; i++) {
      s.put(attach(job, "k" + i));
    }
    s.put(attach(nested, "n0"));

    assertThatThrownBy(() -> s.put(attach(job, "one-more")))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).as("%s", e.getStatus()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
          assertThat(e.getStatus().getDescription())
              .contains("the tenure of lease 'job' has " + MAX + " attached keys, the most a tenure may have (--max-keys-per-session " + MAX + ")")
              .endsWith("; nothing was written");
        });
    assertThat(s.get(GetRequest.newBuilder().setKey(CoreState.ATTACHED_PREFIX + "job/one-more").build()).getKvsCount())
        .as("nothing was written").isZero();

    // Rewriting a key it has adds none, and the other tenure has room of its own.
    s.put(attach(job, "k0"));
    s.put(attach(nested, "n1"));
    assertThat(s.get(GetRequest.newBuilder().setKey(CoreState.ATTACHED_PREFIX + "job/part/n1").build()).getKvsCount())
        .isEqualTo(1);
  }

  private static Tenure acquire(LeaseholdGrpc.LeaseholdBlockingStub s, String name) {
    long session = s.grant(GrantRequest.newBuilder().setOwner("o").setTtlMillis(60_000).build()).getSessionId();
    AcquireResponse held =
        s.acquire(AcquireRequest.newBuilder().setName(name).setHolder("h#1").setRequestId(name.hashCode()).setSessionId(session).build());
    assertThat(held.getAcquired()).isTrue();
    return Tenure.newBuilder().setName(name).setHolder("h#1").setToken(held.getToken()).build();
  }

  private static PutRequest attach(Tenure tenure, String key) {
    return PutRequest.newBuilder().setKey(key).setTenure(tenure).build();
  }
}
