package io.leasehold.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.leasehold.core.proto.BatchOp;
import io.leasehold.core.proto.BatchRequest;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.Event;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.Tenure;
import io.leasehold.core.proto.WatchRequest;
import io.leasehold.core.proto.WatchResponse;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The watch call against hostile and large input, on a real node through a default client: keys
 * and prefixes held to the keys' limit, replies of big values that a default client can take,
 * and the request size the client port accepts.
 */
@Timeout(120)
@Tag("integration")
class WatchInputTest {

  private static OneNodeCore core;

  @BeforeAll
  static void start() throws Exception {
    core = OneNodeCore.start("watch-input-", c -> c);
  }

  @AfterAll
  static void stop() {
    if (core != null) {
      core.close();
    }
  }

  /** {@return how the watch ended, or the first response, within a few seconds} */
  private static Status firstAnswer(WatchRequest request) {
    Iterator<WatchResponse> responses = core.stub().withDeadlineAfter(5, TimeUnit.SECONDS).watch(request);
    try {
      responses.hasNext();
      return Status.OK;
    } catch (StatusRuntimeException e) {
      return e.getStatus();
    }
  }

  @Test
  void aWatchedKeyOrPrefixLongerThanAnyKeyIsRefusedNamingTheLimit() {
    String tooLong = "k".repeat(Limits.MOST_KEY_BYTES + 1);
    for (boolean prefix : new boolean[] {false, true}) {
      Status status = firstAnswer(WatchRequest.newBuilder().setKey(tooLong).setPrefix(prefix).build());
      assertThat(status.getCode()).as("prefix %s: %s", prefix, status).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
      assertThat(status.getDescription())
          .contains(prefix ? "key (the watched prefix)" : "key (the watched key)")
          .contains("4097 bytes")
          .contains("--max-key-bytes 4096")
          .contains("1 to 4096 bytes")
          .contains("nothing was watched");
    }
    Status empty = firstAnswer(WatchRequest.newBuilder().setKey("").build());
    assertThat(empty.getCode()).as("%s", empty).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(empty.getDescription()).contains("key must not be empty");
  }

  private static void put(String key, ByteString value) {
    core.stub().put(PutRequest.newBuilder().setKey(key).setValue(value).build());
  }

  /** Five values of 1 MiB replayed from the history: a default client gets them all. */
  @Test
  void aReplayOfBigValuesReachesADefaultClient() {
    ByteString mib = ByteString.copyFrom(new byte[Limits.MOST_VALUE_BYTES]);
    long first = core.stub().get(GetRequest.newBuilder().setKey("big/0").build()).getRevision() + 1;
    for (int i = 0; i < 5; i++) {
      put("big/" + i, mib);
    }
    Iterator<WatchResponse> responses =
        core.stub()
            .withDeadlineAfter(30, TimeUnit.SECONDS)
            .watch(WatchRequest.newBuilder().setKey("big/").setPrefix(true).setStartRevision(first).build());
    List<String> keys = new ArrayList<>();
    while (keys.size() < 5) {
      for (Event e : responses.next().getEventsList()) {
        assertThat(e.getKv().getValue().size()).isEqualTo(Limits.MOST_VALUE_BYTES);
        keys.add(e.getKv().getKey());
      }
    }
    assertThat(keys).containsExactly("big/0", "big/1", "big/2", "big/3", "big/4");
  }

  /** The largest legal write of each kind fits {@link Limits#MAX_REQUEST_BYTES}. */
  @Test
  void theLargestLegalRequestsFitTheMessageLimit() {
    PutRequest largestPut =
        PutRequest.newBuilder()
            .setCall(CallId.newBuilder().setClientIdHigh(-1).setClientIdLow(-1).setCallId(Long.MAX_VALUE))
            .setKey("k".repeat(Limits.MOST_KEY_BYTES))
            .setValue(ByteString.copyFrom(new byte[Limits.MOST_VALUE_BYTES]))
            .setSessionId(Long.MAX_VALUE)
            .build();
    assertThat(largestPut.getSerializedSize()).isLessThan(Limits.MAX_REQUEST_BYTES);
    // The client library's batches: at most 256 writes, each an attached value of the Lease API
    // (4096 characters, 3 bytes each at most) on a lease name of 256 and a holder of 320.
    PutRequest attach =
        PutRequest.newBuilder()
            .setCall(CallId.newBuilder().setClientIdHigh(-1).setClientIdLow(-1).setCallId(Long.MAX_VALUE))
            .setKey("k".repeat(128))
            .setValue(ByteString.copyFromUtf8("\u20ac".repeat(4096)))
            .setTenure(Tenure.newBuilder().setName("\u20ac".repeat(256)).setHolder("\u20ac".repeat(320)).setToken(Long.MAX_VALUE))
            .build();
    BatchRequest.Builder batch = BatchRequest.newBuilder();
    for (int i = 0; i < 256; i++) {
      batch.addOps(BatchOp.newBuilder().setPut(attach));
    }
    assertThat(batch.build().getSerializedSize()).isLessThan(Limits.MAX_REQUEST_BYTES);

    put("largest/" + "k".repeat(Limits.MOST_KEY_BYTES - 8), ByteString.copyFrom(new byte[Limits.MOST_VALUE_BYTES]));
  }

  @Test
  void aRequestOverTheMessageLimitIsRefusedWholeAndWritesNothing() {
    BatchRequest.Builder batch = BatchRequest.newBuilder();
    for (int i = 0; i < 5; i++) {
      batch.addOps(
          BatchOp.newBuilder()
              .setPut(PutRequest.newBuilder().setKey("over/" + i).setValue(ByteString.copyFrom(new byte[Limits.MOST_VALUE_BYTES]))));
    }
    assertThatThrownBy(() -> core.stub().batch(batch.build()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED));
    assertThat(core.stub().get(GetRequest.newBuilder().setKey("over/").setPrefix(true).build()).getKvsCount()).isZero();
  }
}
