package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.leasehold.LeaseTimeoutException;
import io.leasehold.core.proto.BatchOp;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.PutResponse;
import io.leasehold.server.replicated.CoreState;
import io.leasehold.server.LocalCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A copy of a write the core applied but whose reply it no longer keeps is answered "too late":
 * the core cannot tell the copy's outcome. The client must report that as unknown (a timeout the
 * caller retries or gives up on), never as a refusal that says nothing was written.
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
}
