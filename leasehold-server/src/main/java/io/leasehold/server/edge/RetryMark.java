package io.leasehold.server.edge;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;

/**
 * Tells the edge which calls are a client's retries: attempts sent after an earlier attempt of
 * the same write had no answer, so that the earlier one may still reach the log. The client names
 * the attempt in the request header {@value #HEADER_NAME} (2 for the first retry; absent on the
 * first attempt).
 *
 * <p>Why it matters: the leader may refuse an acquire from its own state without a log entry
 * ({@code LeaderRefusals}), and then nothing in the replicated state remembers that call. An
 * earlier attempt still on its way (held up at a follower, say) would later reach the log as a
 * call never seen, and take the name, once free, for a holder that was told no: a tenure nobody
 * holds, kept alive with its session. A retry therefore always goes through the log, where the
 * decision is kept for the call id and every late copy is answered with it.
 */
public final class RetryMark implements ServerInterceptor {

  /** The request header naming a call's attempt; {@code CoreClient} sends it on retries. */
  public static final String HEADER_NAME = "leasehold-attempt";

  private static final Metadata.Key<String> HEADER =
      Metadata.Key.of(HEADER_NAME, Metadata.ASCII_STRING_MARSHALLER);

  private static final Context.Key<Boolean> RETRY = Context.key("leasehold-retry");

  /** {@return whether the call being served is a retry (its header names an attempt after the first)} */
  public static boolean isRetry() {
    return RETRY.get() != null;
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    String attempt = headers.get(HEADER);
    if (attempt == null || attempt.equals("1")) {
      // The common case costs no context of its own.
      return next.startCall(call, headers);
    }
    // Anything else counts as a retry, even a value that is no number: sending a call to the log
    // is always allowed, so a doubtful mark costs an entry, never a wrong answer.
    return Contexts.interceptCall(Context.current().withValue(RETRY, Boolean.TRUE), call, headers, next);
  }
}
