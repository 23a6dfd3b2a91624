package io.leasehold.server.raft;

import java.io.IOException;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;

/**
 * The Ratis clients a node forwards calls with, one per leader it has known, so that each call
 * starts at the leader this node's Raft server names now.
 *
 * <p>Why not one client: a Ratis client sends to the leader it last heard of, and learns a new one
 * only from a refusal. After a move or a failover, a client that has not forwarded lately still
 * names the old leader; when that one refuses without naming a successor (it is down, or stepping
 * down), or when a "not ready" refusal closed its stream, Ratis picks a member at random, often the
 * wrong one, and pauses between tries: a rolling restart's logs showed 350 ms spent so on one call
 * whose node had known the new leader all along. Each client still follows refusals by itself as
 * before, so one may have wandered to another member after such a refusal; it comes back with the
 * next refusal that names the leader. Only where a call starts changes.
 *
 * <p>A node keeps two of these, one for writes and one for reads (see {@code RaftGateway}).
 *
 * <p>Clients are kept until the node stops, also those for leaders that left the membership: one
 * per leader ever known, each with a channel per member it has sent to.
 */
public final class LeaderClients implements AutoCloseable {

  private final RaftServer server;
  private final RaftGroupId groupId;
  /** Builds a client for the group as it is now, that first sends to the given leader. */
  private final BiFunction<RaftGroup, RaftPeerId, RaftClient> build;
  /** For a node that names no leader: Ratis's own choice, following refusals as always. */
  private final RaftClient fallback;
  private final Map<RaftPeerId, RaftClient> byLeader = new ConcurrentHashMap<>();
  private volatile boolean closed;

  public LeaderClients(
      RaftServer server, RaftGroupId groupId, RaftClient fallback, BiFunction<RaftGroup, RaftPeerId, RaftClient> build) {
    this.server = server;
    this.groupId = groupId;
    this.fallback = fallback;
    this.build = build;
  }

  /** {@return the client to send a call with now: the one that starts at the leader named now} */
  public RaftClient current() {
    RaftPeerId leader;
    try {
      leader = server.getDivision(groupId).getInfo().getLeaderId();
    } catch (IOException gone) {
      return fallback; // not (or no longer) in the group
    }
    if (leader == null || closed) {
      return fallback;
    }
    RaftClient client = byLeader.get(leader);
    return client != null ? client : newClient(leader);
  }

  private RaftClient newClient(RaftPeerId leader) {
    RaftGroup group;
    try {
      group = server.getDivision(groupId).getGroup(); // the members now, not those at start
    } catch (IOException gone) {
      return fallback;
    }
    if (group.getPeer(leader) == null) {
      return fallback; // a leader not in the configuration this node has applied yet
    }
    RaftClient client = byLeader.computeIfAbsent(leader, id -> build.apply(group, id));
    if (closed) {
      closeQuietly(client); // built while the node closed: the call fails as it would have
    }
    return client;
  }

  @Override
  public void close() {
    closed = true;
    byLeader.values().forEach(LeaderClients::closeQuietly);
  }

  private static void closeQuietly(RaftClient client) {
    try {
      client.close();
    } catch (IOException | RuntimeException e) {
      // closing: nothing to do about it
    }
  }

  /** {@return the leaders it has a client for, for tests} */
  Set<RaftPeerId> leaders() {
    return Set.copyOf(byLeader.keySet());
  }
}
