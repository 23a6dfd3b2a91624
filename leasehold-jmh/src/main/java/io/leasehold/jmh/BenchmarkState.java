package io.leasehold.jmh;

import io.leasehold.server.replicated.CoreState;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Reply;

/**
 * Builds a {@link CoreState} of a given size through {@link CoreState#apply}, with commands made
 * as the core's client service makes them: {@value #CLIENTS} client processes, each with one
 * session, holding the named leases round-robin. The deduplication table is therefore as full as
 * it gets in production ({@value CoreState#REPLIES_KEPT_PER_CLIENT} replies per client), and it
 * goes into every snapshot.
 */
final class BenchmarkState {

  /** Client processes (and sessions) that hold the leases. */
  static final int CLIENTS = 1000;

  /** The term every entry is appended in. */
  static final long TERM = 1;

  private static final long TTL_MILLIS = 10_000;

  final CoreState state = new CoreState();
  private long index;
  private final long[] nextCall = new long[CLIENTS + 1];

  /**
   * A state in which {@link #CLIENTS} sessions hold {@code leases} named leases.
   *
   * @param leases how many leases are held
   */
  BenchmarkState(int leases) {
    for (int c = 1; c <= CLIENTS; c++) {
      GrantRequest grant =
          GrantRequest.newBuilder().setCall(call(c)).setOwner(owner(c)).setTtlMillis(TTL_MILLIS).build();
      expectOk(state.apply(++index, TERM, Command.newBuilder().setGrant(grant).build()));
    }
    for (int i = 0; i < leases; i++) {
      expectOk(state.apply(++index, TERM, acquire(1 + i % CLIENTS, leaseName(i), 1)));
    }
  }

  /** {@return the index the next entry must have} */
  long nextIndex() {
    return index + 1;
  }

  /**
   * An acquire as a holder of client {@code client} sends it, with that client's next call id.
   * Client {@code c}'s session id is {@code c}: sessions were granted at indexes 1 to {@link
   * #CLIENTS}.
   *
   * @param client 1 to {@link #CLIENTS}
   * @param name the lease name
   * @param requestId the holder's acquire request id
   * @return the command
   */
  Command acquire(int client, String name, long requestId) {
    AcquireRequest request =
        AcquireRequest.newBuilder()
            .setCall(call(client))
            .setName(name)
            .setHolder(holder(client))
            .setRequestId(requestId)
            .setSessionId(client)
            .build();
    return Command.newBuilder().setAcquire(request).build();
  }

  private CallId call(int client) {
    return CallId.newBuilder()
        .setClientIdHigh(0x5EED_0000_0000_0000L | client)
        .setClientIdLow(~(long) client)
        .setCallId(++nextCall[client])
        .build();
  }

  static String leaseName(int i) {
    return String.format("lease-%06d", i);
  }

  /** {@return a holder id of the form the engine sends: owner, '#', 16 hex digits} */
  static String holder(int client) {
    return owner(client) + '#' + String.format("%016x", 0x1CE_0000_0000L + client);
  }

  private static String owner(int client) {
    return "worker-" + client;
  }

  static void expectOk(CoreState.Applied applied) {
    if (applied.reply().getKindCase() != Reply.KindCase.OK) {
      throw new IllegalStateException("setup command refused: " + applied.reply());
    }
  }
}
