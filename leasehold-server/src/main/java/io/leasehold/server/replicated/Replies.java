package io.leasehold.server.replicated;

import com.google.protobuf.ByteString;
import io.leasehold.server.state.Failure;
import io.leasehold.server.state.Reply;

/** The replies the replicated state answers commands with. */
final class Replies {

  private Replies() {}

  /** {@return a success carrying {@code response} (a serialised response message, or empty)} */
  static Reply ok(ByteString response) {
    return Reply.newBuilder().setOk(response).build();
  }

  /** {@return a refusal: the command changed nothing} */
  static Reply failure(Failure.Code code, String message) {
    return Reply.newBuilder().setFailure(Failure.newBuilder().setCode(code).setMessage(message)).build();
  }
}
