package io.leasehold.server.replicated;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.server.Limits;
import io.leasehold.server.state.Command;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A prefix read answers one page at a time: by count and by bytes, from after a key, always at
 * least one key, and pages read one after another give every key once, in order.
 */
@Timeout(30)
class PagedGetTest {

  private final CoreState state = new CoreState();
  private long index;

  private void put(String key, int valueBytes) {
    put(key, valueBytes, 0);
  }

  private void put(String key, int valueBytes, long session) {
    Command c =
        Command.newBuilder()
            .setPut(
                PutRequest.newBuilder()
                    .setCall(CallId.newBuilder().setClientIdHigh(1).setClientIdLow(2).setCallId(index + 1))
                    .setKey(key)
                    .setSessionId(session)
                    .setValue(ByteString.copyFrom(new byte[valueBytes])))
            .build();
    state.apply(++index, 1, c);
  }

  private long grant() throws IOException {
    Command c =
        Command.newBuilder()
            .setGrant(
                GrantRequest.newBuilder()
                    .setCall(CallId.newBuilder().setClientIdHigh(1).setClientIdLow(2).setCallId(index + 1))
                    .setOwner("o")
                    .setTtlMillis(60_000))
            .build();
    return GrantResponse.parseFrom(state.apply(++index, 1, c).reply().getOk()).getSessionId();
  }

  private GetResponse pageOf(List<Long> sessions, String prefix, int limit, String after) {
    return state.get(
        GetRequest.newBuilder().setKey(prefix).setPrefix(true).setLimit(limit).setStartAfter(after).addAllSessionIds(sessions).build());
  }

  /**
   * A read naming sessions answers only their keys, merged in key order from each session's own
   * keys, paged like any other; unknown and repeated ids change nothing.
   */
  @Test
  void aReadNamingSessionsAnswersOnlyTheirKeysInPages() throws IOException {
    long a = grant();
    long b = grant();
    long other = grant();
    for (int i = 0; i < 12; i++) {
      put(String.format("p/%02d", i), 10, i % 3 == 0 ? a : i % 3 == 1 ? b : other);
    }
    put("p/none", 10);
    put("o/a-outside", 10, a);
    put("q/a-outside", 10, a);

    List<Long> ours = List.of(b, a, a, 987_654L);
    List<String> all = new ArrayList<>();
    GetResponse next = pageOf(ours, "p/", 3, "");
    all.addAll(keys(next));
    assertThat(keys(next)).containsExactly("p/00", "p/01", "p/03");
    while (next.getMore()) {
      next = pageOf(ours, "p/", 3, next.getNextStartAfter());
      all.addAll(keys(next));
    }
    assertThat(all).containsExactly("p/00", "p/01", "p/03", "p/04", "p/06", "p/07", "p/09", "p/10");
    assertThat(keys(pageOf(List.of(987_654L), "p/", 10, ""))).as("an unknown session has no keys").isEmpty();
    assertThat(keys(pageOf(List.of(other), "p/", 10, "p/05"))).containsExactly("p/08", "p/11");

    GetRequest one = GetRequest.newBuilder().setKey("p/02").addSessionIds(a).build();
    assertThat(keys(state.get(one))).as("one key, on another session").isEmpty();
    assertThat(keys(state.get(one.toBuilder().addSessionIds(other).build()))).containsExactly("p/02");
  }

  private GetResponse page(String prefix, int limit, String after) {
    return state.get(GetRequest.newBuilder().setKey(prefix).setPrefix(true).setLimit(limit).setStartAfter(after).build());
  }

  private static List<String> keys(GetResponse r) {
    return r.getKvsList().stream().map(KeyValue::getKey).toList();
  }

  @Test
  void pagesByCountFromAfterAKeyGiveEveryKeyOnceInOrder() {
    for (int i = 0; i < 25; i++) {
      put(String.format("p/%02d", i), 10);
    }
    put("o/before", 10);
    put("q/after", 10);

    GetResponse first = page("p/", 10, "");
    assertThat(keys(first)).hasSize(10).startsWith("p/00").endsWith("p/09");
    assertThat(first.getMore()).isTrue();
    assertThat(first.getNextStartAfter()).isEqualTo("p/09");

    List<String> all = new ArrayList<>(keys(first));
    GetResponse next = first;
    while (next.getMore()) {
      next = page("p/", 10, next.getNextStartAfter());
      all.addAll(keys(next));
    }
    assertThat(all).hasSize(25).isSorted().doesNotHaveDuplicates().allMatch(k -> k.startsWith("p/"));
    assertThat(next.getNextStartAfter()).as("no next key on the last page").isEmpty();

    // Exactly the limit left: the page that holds them says nothing remains.
    assertThat(page("p/", 5, "p/19").getMore()).isFalse();
    // A start_after before the prefix starts at the prefix.
    assertThat(keys(page("p/", 1, "a"))).containsExactly("p/00");
  }

  @Test
  void aPageStopsBeforeTheKeyThatWouldTakeItPastItsBytesButHoldsOneKeyAlways() {
    int value = 300 * 1024;
    for (int i = 0; i < 8; i++) {
      put("big/" + i, value);
    }
    GetResponse first = page("big/", 1000, "");
    assertThat(first.getKvsCount()).as("keys of 300 KiB in a 1 MiB page").isEqualTo(3);
    assertThat(first.getSerializedSize()).isLessThanOrEqualTo(Limits.MAX_PAGE_BYTES + 64);
    assertThat(first.getMore()).isTrue();

    put("huge/0", Limits.MOST_VALUE_BYTES);
    put("huge/1", Limits.MOST_VALUE_BYTES);
    GetResponse one = page("huge/", 1000, "");
    assertThat(keys(one)).as("a key larger than a page still comes, alone").containsExactly("huge/0");
    assertThat(one.getMore()).isTrue();
  }

  @Test
  void anUnpagedReadStopsAtItsBytesAndSaysMoreRemain() {
    for (int i = 0; i < 5; i++) {
      put("all/" + i, Limits.MOST_VALUE_BYTES);
    }
    GetResponse unpaged = state.get(GetRequest.newBuilder().setKey("all/").setPrefix(true).build());
    assertThat(unpaged.getKvsCount()).isEqualTo(3);
    assertThat(unpaged.getMore()).as("the edge refuses an unpaged read that has more").isTrue();

    GetResponse small = state.get(GetRequest.newBuilder().setKey("all/4").setPrefix(true).build());
    assertThat(keys(small)).containsExactly("all/4");
    assertThat(small.getMore()).isFalse();
  }

  @Test
  void aLimitAboveTheMostAPageHoldsGetsTheMost() {
    for (int i = 0; i < Limits.MAX_PAGE_KEYS + 5; i++) {
      put(String.format("n/%06d", i), 0);
    }
    for (int limit : new int[] {Integer.MAX_VALUE, -1 /* uint32 4294967295 */}) {
      GetResponse page = page("n/", limit, "");
      assertThat(page.getKvsCount()).isEqualTo(Limits.MAX_PAGE_KEYS);
      assertThat(page.getMore()).isTrue();
    }
  }
}
