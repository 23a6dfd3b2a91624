package io.leasehold.client;

import io.leasehold.LeaseProtocolException;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.KeyValue;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Consumer;

/**
 * Reads every key under a prefix in pages ({@code GetRequest.limit}, {@code start_after}), so that
 * no answer is larger than a page however many keys there are. Each page is its own linearizable
 * read at its own revision: the pages together are not one snapshot. What a page says is exact
 * for its key range at its revision ({@link Page}); a caller that needs a view equal to the
 * store's combines that with a watch (see {@link LeaseWatch}).
 *
 * <p>A node from before paged reads ignores the page fields and answers every key at once, with
 * {@code more} unset: that one answer is the whole read, as before.
 */
final class PrefixPages {

  /** Keys a page asks for: the most a node answers in one page. */
  static final int PAGE_KEYS = 10_000;

  /**
   * One page: every key under the prefix in {@code (after, upTo]} at {@code revision}.
   *
   * @param kvs the keys, in key order
   * @param revision the revision the page's read reflects
   * @param after the page's keys are after this one (exclusive); empty for the first page
   * @param upTo the page's keys are up to this one (inclusive); null for the last page (to the end)
   * @param first whether this is the first page of the read
   */
  record Page(List<KeyValue> kvs, long revision, String after, String upTo, boolean first) {

    /** {@return whether this page says whether {@code key} existed at its revision} */
    boolean covers(String key) {
      return key.compareTo(after) > 0 && (upTo == null || key.compareTo(upTo) <= 0);
    }

    /** {@return whether this is the last page} */
    boolean last() {
      return upTo == null;
    }
  }

  private PrefixPages() {}

  /**
   * Reads every key under {@code prefix}, one page after another, each handed to {@code each} (on
   * the thread that received it) before the next is asked for.
   *
   * @param client the connection
   * @param prefix the key prefix
   * @param pageKeys keys per page asked for, 1 to {@value #PAGE_KEYS}
   * @param each called with every page, in key order; an exception it throws ends the read
   * @return completes after the last page was handed over, or with the first failure (a failed
   *     page is not asked for again: read again from the start)
   */
  static CompletableFuture<Void> read(CoreClient client, String prefix, int pageKeys, Consumer<Page> each) {
    return read(client, prefix, List.of(), pageKeys, each);
  }

  /**
   * Reads the keys under {@code prefix} attached to {@code sessionIds}, one page after another.
   * A page is exact for those sessions' keys in its key range; a node from before session-filtered
   * reads answers every key under the prefix (a superset, so a caller that looks for its own keys
   * in a page is answered right either way).
   *
   * @param sessionIds the sessions whose keys to read; empty: every key
   * @see #read(CoreClient, String, int, Consumer)
   */
  static CompletableFuture<Void> read(
      CoreClient client, String prefix, List<Long> sessionIds, int pageKeys, Consumer<Page> each) {
    if (pageKeys < 1 || pageKeys > PAGE_KEYS) {
      throw new IllegalArgumentException("pageKeys must be 1 to " + PAGE_KEYS + "; was " + pageKeys);
    }
    CompletableFuture<Void> done = new CompletableFuture<>();
    GetRequest first =
        GetRequest.newBuilder().setKey(prefix).setPrefix(true).setLimit(pageKeys).addAllSessionIds(sessionIds).build();
    next(client, first, "", true, each, done);
    return done;
  }

  /** Reads every key under {@code prefix} into one list (in key order), page by page. */
  static CompletableFuture<List<KeyValue>> readAll(CoreClient client, String prefix) {
    List<KeyValue> all = new ArrayList<>();
    return read(client, prefix, PAGE_KEYS, page -> all.addAll(page.kvs())).thenApply(v -> all);
  }

  private static void next(
      CoreClient client, GetRequest request, String after, boolean first, Consumer<Page> each,
      CompletableFuture<Void> done) {
    String prefix = request.getKey();
    GetRequest get = request.toBuilder().setStartAfter(after).build();
    client
        .<GetResponse>call((stub, out) -> stub.get(get, out))
        .whenComplete(
            (response, error) -> {
              if (error != null) {
                done.completeExceptionally(error instanceof CompletionException && error.getCause() != null ? error.getCause() : error);
                return;
              }
              String upTo = null;
              if (response.getMore()) {
                upTo = response.getNextStartAfter();
                if (upTo.compareTo(after) <= 0) { // a node that says "more" must move on
                  done.completeExceptionally(
                      new LeaseProtocolException(
                          "the core's page of \"" + prefix + "\" after \"" + after + "\" did not move on (next_start_after \""
                              + upTo + "\")", null));
                  return;
                }
              }
              try {
                each.accept(new Page(response.getKvsList(), response.getRevision(), after, upTo, first));
              } catch (RuntimeException e) {
                done.completeExceptionally(e);
                return;
              }
              if (upTo == null) {
                done.complete(null);
              } else {
                next(client, request, upTo, false, each, done);
              }
            });
  }
}
