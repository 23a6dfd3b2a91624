package io.leasehold.server.replicated;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.server.Limits;
import io.leasehold.server.state.Command;
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
    Command c =
        Command.newBuilder()
            .setPut(
                PutRequest.newBuilder()
                    .setCall(CallId.newBuilder().setClientIdHigh(1).setClientIdLow(2).setCallId(index + 1))
                    .setKey(key)
                    .setValue(ByteString.copyFrom(new byte[valueBytes])))
            .build();
    state.apply(++index, 1, c);
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
