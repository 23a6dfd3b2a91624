package io.leasehold.server.replicated;

import io.leasehold.core.proto.CallId;
import io.leasehold.server.state.ClientCalls;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Hole;
import io.leasehold.server.state.Reply;
import io.leasehold.server.state.SnapshotBody;
import io.leasehold.server.state.StoredReply;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The part of the replicated state that applies each retried write once, for as long as a copy
 * can still arrive. Each write carries its client's id and a call id that the client increases per
 * call. Per client this keeps the highest call id applied, the lower ids not applied yet ("holes":
 * calls overtaken by later ones, at most {@value #MAX_HOLES_PER_CLIENT}, and {@value
 * #FIRST_CALL_HOLES} below its first call, each for {@value #DEDUP_WINDOW_MILLIS} ms), and the
 * replies of its last {@value CoreState#REPLIES_KEPT_PER_CLIENT} calls. A copy of an applied call
 * is answered from its reply if that is still kept, and refused ({@code TOO_LATE}) otherwise; it
 * is never applied again, however many calls came in between. A client is forgotten {@value
 * #DEDUP_WINDOW_MILLIS} ms of cluster time after its last write: by then no copy of its calls can
 * still arrive, because a copy that reaches the log more than {@value
 * CoreState#MAX_CALL_DELAY_MILLIS} ms after the node received it is refused, and a client retries
 * for much less than the difference.
 *
 * <p>Deterministic like the rest of the state (time is the cluster time {@link CoreState} passes
 * in), and not thread-safe: {@code CoreState}'s lock guards it.
 */
final class CallDedup {

  /** How long (cluster time) a client's calls are recognised after its last write. */
  static final long DEDUP_WINDOW_MILLIS = 5 * 60_000;

  /** Calls of one client that may be overtaken by later ones and still be applied. */
  static final int MAX_HOLES_PER_CLIENT = 1024;

  /** Of those, the ones below a client's first call applied (see {@link Calls#remember}). */
  static final int FIRST_CALL_HOLES = 16;

  /**
   * What {@link #bytes()} charges for each client remembered, besides its holes and replies: its
   * map entry, its maps and their headers.
   */
  static final int BYTES_PER_CLIENT = 256;

  /** What {@link #bytes()} charges for each hole: a tree-map entry and two boxed longs. */
  static final int BYTES_PER_HOLE = 64;

  /** What {@link #bytes()} charges for each kept reply besides its serialised bytes. */
  static final int BYTES_PER_REPLY = 64;

  /** Clients in a fixed order, so that equal states write equal snapshots. */
  private static final Comparator<ClientKey> CLIENT_ORDER =
      Comparator.comparingLong(ClientKey::high).thenComparingLong(ClientKey::low);

  private final Map<ClientKey, Calls> clients = new HashMap<>();
  /** {@link #bytes()}, kept as every change happens (under {@code CoreState}'s lock). */
  private long bytes;

  private record ClientKey(long high, long low) {}

  /** What is remembered of one client's calls. */
  final class Calls {
    private final LinkedHashMap<Long, Reply> replies = new LinkedHashMap<>();
    /** The highest call id applied. */
    private long high;
    /** Call ids below {@link #high} not applied yet, each with the cluster time it became one. */
    private final TreeMap<Long, Long> holes = new TreeMap<>();
    /** Cluster time of the client's last write. */
    private long lastMillis;
    /** This client's share of {@link CallDedup#bytes()}. */
    private long ownBytes;

    private void charge(long delta) {
      ownBytes += delta;
      bytes += delta;
    }

    private void putHole(long id, long sinceMillis) {
      if (holes.put(id, sinceMillis) == null) {
        charge(BYTES_PER_HOLE);
      }
    }

    private void putReply(long callId, Reply reply) {
      Reply replaced = replies.put(callId, reply);
      charge(replyBytes(reply) - (replaced == null ? 0 : replyBytes(replaced)));
    }

    /** {@return whether {@code callId} is at or below the highest call applied: applied, or a hole} */
    boolean atOrBelowHighest(long callId) {
      return callId <= high;
    }

    /** {@return the kept reply of call {@code callId}, or null} */
    Reply reply(long callId) {
      return replies.get(callId);
    }

    /**
     * {@return whether {@code callId} is a hole still open at cluster time {@code nowMillis}: the
     * first copy of a call that later calls overtook, which may still be applied}
     */
    boolean openHole(long callId, long nowMillis) {
      Long openSince = holes.get(callId);
      return openSince != null && nowMillis - openSince <= DEDUP_WINDOW_MILLIS;
    }

    /** Records that {@code callId} was applied at cluster time {@code nowMillis}, with its reply. */
    void remember(long callId, Reply reply, long nowMillis) {
      if (callId > high) {
        // Lower ids not applied yet may still arrive (their calls were overtaken): keep them open.
        // Below a client's first call only a few: anyone can send a first call from a fresh client
        // id with a far call id, and a hole for every id below it would be memory for nothing (a
        // thousand such calls in one batch once took a gigabyte per replica). A real client's first
        // calls go out together, so only one overtaken by more than that many is refused as too late.
        long lowest = high == 0 ? callId - FIRST_CALL_HOLES : callId - MAX_HOLES_PER_CLIENT;
        for (long id = Math.max(high + 1, lowest); id < callId; id++) {
          putHole(id, nowMillis);
        }
        high = callId;
      } else if (holes.remove(callId) != null) {
        charge(-BYTES_PER_HOLE);
      }
      if (!holes.isEmpty()) {
        // Holes are made in increasing id and time, so the lowest is the oldest.
        while (holes.size() > MAX_HOLES_PER_CLIENT
            || (!holes.isEmpty() && nowMillis - holes.firstEntry().getValue() > DEDUP_WINDOW_MILLIS)) {
          holes.pollFirstEntry();
          charge(-BYTES_PER_HOLE);
        }
      }
      putReply(callId, reply);
      if (replies.size() > CoreState.REPLIES_KEPT_PER_CLIENT) {
        Iterator<Reply> oldest = replies.values().iterator();
        charge(-replyBytes(oldest.next()));
        oldest.remove();
      }
      lastMillis = nowMillis;
    }
  }

  /** {@return what is remembered of the calls of the client that sent {@code call}; new if nothing} */
  Calls of(CallId call) {
    return clients.computeIfAbsent(new ClientKey(call.getClientIdHigh(), call.getClientIdLow()), c -> newCalls());
  }

  /** {@return whether calls of the client that sent {@code call} are remembered} */
  boolean remembers(CallId call) {
    return clients.containsKey(new ClientKey(call.getClientIdHigh(), call.getClientIdLow()));
  }

  private Calls newCalls() {
    Calls calls = new Calls();
    calls.charge(BYTES_PER_CLIENT);
    return calls;
  }

  /** Forgets clients idle for the whole window: no copy of their calls can arrive any more. */
  void forgetIdle(long nowMillis) {
    clients.values().removeIf(c -> {
      boolean idle = nowMillis - c.lastMillis > DEDUP_WINDOW_MILLIS;
      if (idle) {
        bytes -= c.ownBytes;
      }
      return idle;
    });
  }

  /**
   * {@return the bytes what is remembered of clients' calls takes, as {@code --max-data-bytes}
   * counts them: {@value #BYTES_PER_CLIENT} per client, {@value #BYTES_PER_HOLE} per hole, and
   * each kept reply's serialised bytes plus {@value #BYTES_PER_REPLY}} Bounded per client, not in
   * clients: anyone may send calls from fresh client ids, each remembered for the whole window.
   * Kept as every change happens; read under {@code CoreState}'s lock, which publishes it once per
   * applied command for the edge.
   */
  long bytes() {
    return bytes;
  }

  /** {@return {@link #bytes()} counted anew from what is remembered} */
  long recountBytes() {
    long total = 0;
    for (Calls c : clients.values()) {
      total += BYTES_PER_CLIENT + (long) BYTES_PER_HOLE * c.holes.size();
      for (Reply r : c.replies.values()) {
        total += replyBytes(r);
      }
    }
    return total;
  }

  private static long replyBytes(Reply reply) {
    return BYTES_PER_REPLY + reply.getSerializedSize();
  }

  /** {@return the client's call id of a command a client sent; null for one the cluster wrote} */
  static CallId callOf(Command command) {
    switch (command.getKindCase()) {
      case GRANT:
        return command.getGrant().getCall();
      case REVOKE:
        return command.getRevoke().getCall();
      case PUT:
        return command.getPut().getCall();
      case DELETE:
        return command.getDelete().getCall();
      case COMPARE_AND_SET:
        return command.getCompareAndSet().getCall();
      case ACQUIRE:
        return command.getAcquire().getCall();
      case RELEASE:
        return command.getRelease().getCall();
      default:
        return null; // written by the cluster itself
    }
  }

  /** Adds every client's calls to a snapshot, in a fixed order. */
  void writeTo(SnapshotBody.Builder body) {
    TreeMap<ClientKey, Calls> ordered = new TreeMap<>(CLIENT_ORDER);
    ordered.putAll(clients);
    ordered.forEach(
        (client, calls) -> {
          ClientCalls.Builder c =
              ClientCalls.newBuilder()
                  .setClientIdHigh(client.high())
                  .setClientIdLow(client.low())
                  .setHigh(calls.high)
                  .setLastMillis(calls.lastMillis);
          calls.holes.forEach((id, since) -> c.addHoles(Hole.newBuilder().setCallId(id).setSinceMillis(since)));
          calls.replies.forEach(
              (callId, reply) -> c.addReplies(StoredReply.newBuilder().setCallId(callId).setReply(reply)));
          body.addClients(c);
        });
  }

  /**
   * Replaces what is remembered with a snapshot's clients.
   *
   * @param repliesOnly the snapshot's format kept only the last replies (format 1): every lower id
   *     then counts as applied, so that a call still under way from before the upgrade is refused
   *     rather than risk applying one twice
   * @param nowMillis the snapshot's cluster time
   */
  void readFrom(List<ClientCalls> snapshotClients, boolean repliesOnly, long nowMillis) {
    clients.clear();
    bytes = 0;
    for (ClientCalls c : snapshotClients) {
      Calls calls = newCalls();
      c.getRepliesList().forEach(r -> calls.putReply(r.getCallId(), r.getReply()));
      if (repliesOnly) {
        calls.high = calls.replies.keySet().stream().mapToLong(Long::longValue).max().orElse(0);
        calls.lastMillis = nowMillis;
      } else {
        calls.high = c.getHigh();
        calls.lastMillis = c.getLastMillis();
        c.getHolesList().forEach(h -> calls.putHole(h.getCallId(), h.getSinceMillis()));
      }
      clients.put(new ClientKey(c.getClientIdHigh(), c.getClientIdLow()), calls);
    }
  }
}
