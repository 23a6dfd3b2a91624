package io.leasehold.server.raft;

import io.leasehold.server.state.Batch;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Reply;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Function;
import org.apache.ratis.protocol.exceptions.ResourceUnavailableException;

/**
 * Packs writes into Raft entries: a write that arrives while fewer than {@link
 * #MAX_ENTRIES_IN_FLIGHT} entries are on their way through the log goes out at once, alone; writes
 * that arrive while that many are in flight wait, and go out together as one {@link Batch} entry
 * as soon as one comes back. No timer: a quiet node adds no latency, a busy one pays one Raft round
 * (append, fsync, replication, retry-cache slot, reply bookkeeping) per batch instead of per write.
 *
 * <p>Each command keeps its own call id, so a retried write is still applied once, and its own
 * reply. The replies are handed out on {@code replies}, never on Ratis's applying thread.
 */
public final class EntryBatcher {

  /** Entries on their way through the log at once; more arrivals wait and go out together. */
  static final int MAX_ENTRIES_IN_FLIGHT = 2;

  /** Commands in one entry at most. */
  static final int MAX_COMMANDS_PER_ENTRY = 1024;

  /** Bytes of commands in one entry at most (a larger single command still goes, alone). */
  static final int MAX_ENTRY_BYTES = 1 << 20;

  /** Writes waiting for an entry before more are refused as overload. */
  static final int MAX_WAITING = 100_000;

  private record Pending(Command command, CompletableFuture<Reply> reply) {}

  private final Function<Command, CompletableFuture<Reply>> submit;
  private final Executor replies;
  private final String node;
  private final ArrayDeque<Pending> waiting = new ArrayDeque<>();
  /** Held from taking an entry until it is appended: entries reach the log in the order taken. */
  private final Object sendOrder = new Object();
  private int inFlight;

  /**
   * @param submit appends one entry and completes with its reply
   * @param replies where replies are handed out
   * @param node this node's id, for messages
   */
  EntryBatcher(Function<Command, CompletableFuture<Reply>> submit, Executor replies, String node) {
    this.submit = submit;
    this.replies = replies;
    this.node = node;
  }

  /** Appends {@code command} to the log (alone or with others) and completes with its reply. */
  CompletableFuture<Reply> write(Command command) {
    Pending pending = new Pending(command, new CompletableFuture<>());
    synchronized (this) {
      if (waiting.size() >= MAX_WAITING) {
        pending.reply.completeExceptionally(
            new ResourceUnavailableException(
                "node " + node + " is overloaded: " + MAX_WAITING + " writes already wait for the log"));
        return pending.reply;
      }
      waiting.add(pending);
    }
    sendWhatFits();
    return pending.reply;
  }

  /** {@return whether no write is on its way through the log or waiting for an entry} */
  synchronized boolean idle() {
    return inFlight == 0 && waiting.isEmpty();
  }

  /** {@return how many writes wait for an entry (for tests and status)} */
  synchronized int waiting() {
    return waiting.size();
  }

  private void sendWhatFits() {
    while (true) {
      // Entries are appended in the order they were taken, so writes apply in the order they
      // arrived (a release before the acquire that follows it, see LeaderRefusals): without this,
      // two threads that each took an entry could append them the other way round. Appending is
      // quick — Ratis returns once the entry is in the leader's log, before it is replicated.
      synchronized (sendOrder) {
        List<Pending> entry;
        synchronized (this) {
          if (inFlight >= MAX_ENTRIES_IN_FLIGHT || waiting.isEmpty()) {
            return;
          }
          entry = takeEntry();
          inFlight++;
        }
        send(entry);
      }
    }
  }

  /** Takes the waiting writes that fit one entry, in arrival order. Holds the monitor. */
  private List<Pending> takeEntry() {
    List<Pending> entry = new ArrayList<>(Math.min(waiting.size(), MAX_COMMANDS_PER_ENTRY));
    long bytes = 0;
    while (!waiting.isEmpty() && entry.size() < MAX_COMMANDS_PER_ENTRY) {
      int size = waiting.peek().command().getSerializedSize();
      if (!entry.isEmpty() && bytes + size > MAX_ENTRY_BYTES) {
        break;
      }
      bytes += size;
      entry.add(waiting.poll());
    }
    return entry;
  }

  private void send(List<Pending> entry) {
    Command command;
    if (entry.size() == 1) {
      command = entry.get(0).command();
    } else {
      Batch.Builder batch = Batch.newBuilder();
      entry.forEach(p -> batch.addCommands(p.command()));
      command = Command.newBuilder().setBatch(batch).build();
    }
    CompletableFuture<Reply> sent;
    try {
      sent = submit.apply(command);
    } catch (RuntimeException e) {
      sent = CompletableFuture.failedFuture(e);
    }
    sent.whenComplete((reply, error) -> handOut(() -> {
      synchronized (this) {
        inFlight--;
      }
      sendWhatFits();
      deliver(entry, reply, error);
    }));
  }

  /**
   * Runs {@code delivery} on the reply executor, or here if it refuses (the node is stopping):
   * every write is answered, never left open until its caller's deadline or the JVM's exit.
   */
  private void handOut(Runnable delivery) {
    try {
      replies.execute(delivery);
    } catch (RejectedExecutionException stopping) {
      delivery.run();
    }
  }

  private static void deliver(List<Pending> entry, Reply reply, Throwable error) {
    if (error != null) {
      Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
      entry.forEach(p -> p.reply().completeExceptionally(cause));
      return;
    }
    if (entry.size() == 1) {
      entry.get(0).reply().complete(reply);
      return;
    }
    List<Reply> each = reply.getBatch().getRepliesList();
    if (each.size() != entry.size()) {
      IllegalStateException e =
          new IllegalStateException("a batch of " + entry.size() + " commands got " + each.size() + " replies");
      entry.forEach(p -> p.reply().completeExceptionally(e));
      return;
    }
    for (int i = 0; i < entry.size(); i++) {
      entry.get(i).reply().complete(each.get(i));
    }
  }
}
