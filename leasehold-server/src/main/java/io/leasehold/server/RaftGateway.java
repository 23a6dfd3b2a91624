package io.leasehold.server;

import io.leasehold.server.state.Command;
import io.leasehold.server.state.Query;
import io.leasehold.server.state.Reply;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.thirdparty.com.google.protobuf.UnsafeByteOperations;

/**
 * A node's way into the Raft group: writes go through the log, reads through the leader's
 * ReadIndex. Whichever node a client reached, Ratis's client inside it finds the leader and
 * follows it across elections, within a bounded retry policy.
 */
final class RaftGateway {

  private final RaftClient client;

  RaftGateway(RaftClient client) {
    this.client = client;
  }

  /** Appends {@code command} to the log and completes with its reply once it is applied. */
  CompletableFuture<Reply> write(Command command) {
    return client
        .async()
        .send(message(command.toByteArray()))
        .thenApply(
            reply -> {
              try {
                return Reply.parseFrom(content(reply));
              } catch (IOException e) {
                throw new UncheckedIOException("malformed reply from the state machine", e);
              }
            });
  }

  /** Runs {@code query} on the leader after a ReadIndex round; completes with its answer. */
  CompletableFuture<byte[]> read(Query query) {
    return client.async().sendReadOnly(message(query.toByteArray())).thenApply(RaftGateway::content);
  }

  private static byte[] content(RaftClientReply reply) {
    if (!reply.isSuccess()) {
      throw new CompletionException(reply.getException());
    }
    return reply.getMessage().getContent().toByteArray();
  }

  private static Message message(byte[] bytes) {
    return Message.valueOf(UnsafeByteOperations.unsafeWrap(bytes));
  }
}
