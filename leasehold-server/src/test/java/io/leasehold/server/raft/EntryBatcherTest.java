package io.leasehold.server.raft;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.server.state.BatchReply;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Reply;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class EntryBatcherTest {

  /** The entries the batcher appended, each with the future the test completes. */
  private final List<Command> entries = new ArrayList<>();
  private final List<CompletableFuture<Reply>> appended = new ArrayList<>();

  private final EntryBatcher batcher =
new EntryBatcher(this::appendedFuture, Runnable::run, "n1");

  private static Command put(String key) {
    return Command.newBuilder().setPut(PutRequest.newBuilder().setKey(key)).build();
  }

  private static Reply ok(String s) {
    return Reply.newBuilder().setOk(ByteString.copyFromUtf8(s)).build();
  }

  /** The reply a batch entry gets: one ok per command, naming its key. */
  private static Reply answer(Command entry) {
    if (!entry.hasBatch()) {
      return ok(entry.getPut().getKey());
    }
    BatchReply.Builder replies = BatchReply.newBuilder();
    entry.getBatch().getCommandsList().forEach(c -> replies.addReplies(ok(c.getPut().getKey())));
    return Reply.newBuilder().setBatch(replies).build();
  }

  @Test
  void aWriteOnAQuietNodeGoesOutAloneAtOnce() throws Exception {
    CompletableFuture<Reply> reply = batcher.write(put("a"));
    assertThat(entries).containsExactly(put("a"));
    appended.get(0).complete(answer(entries.get(0)));
    assertThat(reply.get(1, TimeUnit.SECONDS)).isEqualTo(ok("a"));
  }

  /** A stopping node waits for this before it cancels its clients' calls (RaftGateway.awaitIdle). */
  @Test
  void itIsIdleOnlyOnceEveryWriteItTookWasAnswered() {
    assertThat(batcher.idle()).as("nothing taken yet").isTrue();
    for (int i = 0; i < EntryBatcher.MAX_ENTRIES_IN_FLIGHT + 1; i++) {
      batcher.write(put("k" + i));
    }
    assertThat(batcher.idle()).as("entries in flight, one write waiting").isFalse();
    appended.get(0).complete(answer(entries.get(0)));
    appended.get(1).complete(answer(entries.get(1)));
    assertThat(batcher.idle()).as("the waiting write went out and is in flight").isFalse();
    appended.get(2).complete(answer(entries.get(2)));
    assertThat(batcher.idle()).as("every write answered").isTrue();
  }

  @Test
  void writesThatArriveWhileEntriesAreInFlightGoOutTogetherEachWithItsOwnReply() throws Exception {
    List<CompletableFuture<Reply>> replies = new ArrayList<>();
    for (int i = 0; i < EntryBatcher.MAX_ENTRIES_IN_FLIGHT + 5; i++) {
      replies.add(batcher.write(put("k" + i)));
    }
    // The first entries went out alone; the other five wait.
    assertThat(entries).hasSize(EntryBatcher.MAX_ENTRIES_IN_FLIGHT);
    assertThat(batcher.waiting()).isEqualTo(5);

    appended.get(0).complete(answer(entries.get(0)));
    // One came back: the five waiting ones go out as one batch entry, in arrival order.
    assertThat(entries).hasSize(EntryBatcher.MAX_ENTRIES_IN_FLIGHT + 1);
    Command batch = entries.get(EntryBatcher.MAX_ENTRIES_IN_FLIGHT);
    assertThat(batch.getBatch().getCommandsList()).extracting(c -> c.getPut().getKey())
        .containsExactly("k2", "k3", "k4", "k5", "k6");
    for (int i = 1; i < entries.size(); i++) {
      appended.get(i).complete(answer(entries.get(i)));
    }
    for (int i = 0; i < replies.size(); i++) {
      assertThat(replies.get(i).get(1, TimeUnit.SECONDS)).isEqualTo(ok("k" + i));
    }
    assertThat(batcher.waiting()).isZero();
  }

  @Test
  void aFailedEntryFailsEveryWriteInItAndTheNextEntryStillGoesOut() throws Exception {
    for (int i = 0; i < EntryBatcher.MAX_ENTRIES_IN_FLIGHT; i++) {
      batcher.write(put("first" + i));
    }
    CompletableFuture<Reply> x = batcher.write(put("x"));
    CompletableFuture<Reply> y = batcher.write(put("y"));
    appended.get(0).complete(answer(entries.get(0)));
    int batchAt = EntryBatcher.MAX_ENTRIES_IN_FLIGHT;
    appended.get(batchAt).completeExceptionally(new IllegalStateException("not the leader"));
    assertThat(x).isCompletedExceptionally();
    assertThat(y).isCompletedExceptionally();
    try {
      x.get();
    } catch (ExecutionException e) {
      assertThat(e.getCause()).hasMessage("not the leader");
    }
    CompletableFuture<Reply> z = batcher.write(put("z"));
    assertThat(entries.get(entries.size() - 1)).isEqualTo(put("z"));
    appended.get(appended.size() - 1).complete(answer(put("z")));
    assertThat(z.get(1, TimeUnit.SECONDS)).isEqualTo(ok("z"));
  }

  @Test
  void aBatchStopsAtTheByteLimitAndALargeCommandStillGoesAlone() {
    for (int i = 0; i < EntryBatcher.MAX_ENTRIES_IN_FLIGHT; i++) {
      batcher.write(put("first" + i));
    }
    ByteString big = ByteString.copyFrom(new byte[EntryBatcher.MAX_ENTRY_BYTES]);
    batcher.write(put("small"));
    batcher.write(Command.newBuilder().setPut(PutRequest.newBuilder().setKey("big").setValue(big)).build());
    appended.get(0).complete(answer(entries.get(0)));
    appended.get(1).complete(answer(entries.get(1)));
    // "small" could not share an entry with "big": two entries, one command each.
    assertThat(entries.subList(2, entries.size()))
        .extracting(c -> c.hasBatch() ? "batch" : c.getPut().getKey())
        .containsExactly("small", "big");
  }

  /**
   * A node that stops shuts its reply executor while entries are still in flight (forwarded to the
   * new leader during a planned stop). Their writes must still be answered: a reply dropped by a
   * refusing executor leaves the client's call open until the JVM exits, which a rolling restart
   * shows as a stall of hundreds of ms.
   */
  @Test
  void anEntryThatComesBackAfterTheReplyExecutorStoppedIsStillAnswered() throws Exception {
    java.util.concurrent.ExecutorService replies = java.util.concurrent.Executors.newSingleThreadExecutor();
    EntryBatcher stopping = new EntryBatcher(entry -> appendedFuture(entry), replies, "n1");
    CompletableFuture<Reply> reply = stopping.write(put("late"));
    replies.shutdownNow();
    appended.get(0).complete(answer(entries.get(0)));
    assertThat(reply.get(1, TimeUnit.SECONDS)).isEqualTo(ok("late"));
  }

  private CompletableFuture<Reply> appendedFuture(Command entry) {
    CompletableFuture<Reply> f = new CompletableFuture<>();
    synchronized (entries) {
      entries.add(entry);
      appended.add(f);
    }
    return f;
  }

  /**
   * Entries reach the log in the order their writes arrived, also when several threads send
   * entries at once (each completed entry lets the thread that completed it send the next): a
   * release and the acquire behind it must not swap places. Four threads complete entries as they
   * are appended while one writer writes; the appended commands, in append order, are the writes in
   * arrival order.
   */
  @Test
  void entriesAreAppendedInTheOrderTheirWritesArrivedWhileManyThreadsSendThem() throws Exception {
    int writes = 20_000;
    java.util.concurrent.BlockingQueue<Runnable> toComplete = new java.util.concurrent.LinkedBlockingQueue<>();
    List<String> appendedKeys = new ArrayList<>();
    EntryBatcher racing =
        new EntryBatcher(
            entry -> {
              CompletableFuture<Reply> f = new CompletableFuture<>();
              Thread.yield(); // a moment between taking an entry and appending it, as Ratis takes
              synchronized (appendedKeys) {
                if (entry.hasBatch()) {
                  entry.getBatch().getCommandsList().forEach(c -> appendedKeys.add(c.getPut().getKey()));
                } else {
                  appendedKeys.add(entry.getPut().getKey());
                }
              }
              toComplete.add(() -> f.complete(answer(entry)));
              return f;
            },
            Runnable::run,
            "n1");
    List<Thread> completers = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      Thread c =
          new Thread(
              () -> {
                try {
                  while (true) {
                    toComplete.take().run();
                  }
                } catch (InterruptedException e) {
                  // the test is over
                }
              });
      c.setDaemon(true);
      c.start();
      completers.add(c);
    }
    try {
      List<CompletableFuture<Reply>> replies = new ArrayList<>();
      List<String> expected = new ArrayList<>();
      for (int i = 0; i < writes; i++) {
        expected.add("w" + i);
        replies.add(racing.write(put("w" + i)));
      }
      CompletableFuture.allOf(replies.toArray(CompletableFuture[]::new)).get(20, TimeUnit.SECONDS);
      synchronized (appendedKeys) {
        assertThat(appendedKeys).containsExactlyElementsOf(expected);
      }
    } finally {
      completers.forEach(Thread::interrupt);
    }
  }
}
