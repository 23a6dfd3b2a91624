package io.leasehold.server;

import io.leasehold.server.state.Command;
import io.leasehold.server.state.Expire;
import io.leasehold.server.state.Reply;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The leader's expiry of sessions whose deadline passed, through the log so that every replica
 * ends them. Runs on one thread, every tick; what it asks of the node (does it lead, in which
 * term, how to submit a command) is injected, so it can be tested without a cluster.
 */
final class SessionExpiry {

  private static final Logger log = LoggerFactory.getLogger(SessionExpiry.class);

  /** What the expiry needs to know about this node's place in the Raft group. */
  interface Leadership {
    /** {@return whether this node leads and has committed an entry of its term} */
    boolean isReadyLeader();

    /** {@return this node's current term} */
    long currentTerm();
  }

  private final String node;
  private final SessionKeeper keeper;
  private final Leadership leadership;
  private final Function<Command, CompletableFuture<Reply>> submit;
  private final Set<Long> expiring = ConcurrentHashMap.newKeySet();
  private volatile Runnable afterLeadershipCheck = () -> {};
  private final java.util.concurrent.atomic.AtomicLong ticks = new java.util.concurrent.atomic.AtomicLong();

  /**
   * @param node this node's id, for the log
   * @param keeper the session deadlines
   * @param leadership this node's leadership
   * @param submit appends a command to the log
   */
  SessionExpiry(String node, SessionKeeper keeper, Leadership leadership, Function<Command, CompletableFuture<Reply>> submit) {
    this.node = node;
    this.keeper = keeper;
    this.leadership = leadership;
    this.submit = submit;
  }

  /** One round: if this node leads, ends the sessions whose deadline passed. */
  void tick() {
    try {
      round();
    } finally {
      ticks.incrementAndGet();
    }
  }

  private void round() {
    if (!leadership.isReadyLeader()) {
      return;
    }
    afterLeadershipCheck.run();
    for (long sessionId : keeper.expired()) {
      if (!expiring.add(sessionId)) {
        continue; // already on its way through the log
      }
      log.info("node {}: session {} expired; deleting it and its keys", node, sessionId);
      Command expire =
          Command.newBuilder()
              .setExpire(Expire.newBuilder().setSessionId(sessionId).setTerm(leadership.currentTerm()))
              .build();
      submit.apply(expire).whenComplete((reply, error) -> {
        expiring.remove(sessionId);
        if (error != null) {
          log.warn("node {}: expiring session {} did not commit (will retry): {}", node, sessionId, error.toString());
        }
      });
    }
  }

  /** For tests: runs {@code hook} on the expiry thread right after a tick found this node leading. */
  void afterLeadershipCheck(Runnable hook) {
    afterLeadershipCheck = hook;
  }

  /** {@return how many rounds have finished} */
  long ticks() {
    return ticks.get();
  }

  /** {@return how many expiries are on their way through the log} */
  int inFlight() {
    return expiring.size();
  }
}
