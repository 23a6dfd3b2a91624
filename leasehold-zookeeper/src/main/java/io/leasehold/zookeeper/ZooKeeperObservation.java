package io.leasehold.zookeeper;

import io.leasehold.LeaseEvent;
import io.leasehold.LeaseHolding;
import io.leasehold.Scheduler;
import io.leasehold.spi.Observation;
import io.leasehold.spi.OpenObservations;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.Watcher.WatcherType;
import org.apache.zookeeper.ZooKeeper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One observation of a named lease on ZooKeeper: a persistent recursive watch (ZooKeeper 3.6+) on
 * the lease node fires for every change of it and its children, in order; each firing reads the
 * lease again ({@link LeaseSnapshot}: lease node and holder node in one read-only multi) and
 * compares it with the state last reported.
 *
 * <p>ZooKeeper's events carry no data, so a read may find several changes at once. The lease
 * node's data version counts them: every tenure and every release changes it, nothing else does.
 * A difference is reported only where the version (and, for a release, the release transaction's
 * own zxid) says exactly what happened; anything else is reported as {@code GAP} with the state
 * read. After a reconnect (the watch may have missed events while disconnected) the same rule
 * applies, and any change at all while free is a {@code GAP}. So nothing is ever skipped silently.
 */
final class ZooKeeperObservation implements Watcher, ConnectionStateListener, OpenObservations.StoreWatch {

  private static final Logger log = LoggerFactory.getLogger(ZooKeeperObservation.class);
  private static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  private final CuratorFramework client;
  private final Scheduler timers;
  private final Observation observation;
  private final String leaseName;
  private final String path;
  private LeaseSnapshot base; // guarded by this: the state last reported
  private boolean reading; // guarded by this
  private boolean again; // guarded by this: a change came while reading
  private int reconnects; // guarded by this
  private int reconnectsCompared; // guarded by this: reconnects before the last read compared
  private boolean closed; // guarded by this

  ZooKeeperObservation(CuratorFramework client, Scheduler timers, Observation observation) {
    this.client = client;
    this.timers = timers;
    this.observation = observation;
    this.leaseName = observation.name();
    this.path = ZNodes.leaseNode(leaseName);
  }

  @Override
  public void start() {
    client.getConnectionStateListenable().addListener(this);
    watchAndRead();
  }

  /** Sets the persistent watch (again after a new session), then reads. */
  private void watchAndRead() {
    ZooKeeper zk = zk();
    if (zk == null) {
      timers.schedule(this::watchAndRead, RETRY_NANOS);
      return;
    }
    zk.addWatch(path, this, AddWatchMode.PERSISTENT_RECURSIVE, (rc, p, ctx) -> {
      if (rc != 0) {
        log.debug("observation of '{}': adding the watch failed (rc {}); trying again", leaseName, rc);
        timers.schedule(this::watchAndRead, RETRY_NANOS);
        return;
      }
      refresh();
    }, null);
  }

  @Override
  public void process(WatchedEvent event) {
    if (event.getType() != Event.EventType.None) {
      refresh();
    }
  }

  @Override
  public void stateChanged(CuratorFramework c, ConnectionState state) {
    if (state == ConnectionState.RECONNECTED) {
      synchronized (this) {
        reconnects++; // events may have been lost while disconnected
      }
      watchAndRead(); // a new session has no watch; the same session's is set again: harmless
    }
  }

  /** Reads the lease once more; a change during a read makes one more read after it. */
  private void refresh() {
    synchronized (this) {
      if (closed) {
        return;
      }
      if (reading) {
        again = true;
        return;
      }
      reading = true;
      again = false;
    }
    ZooKeeper zk = zk();
    if (zk == null) {
      retry();
      return;
    }
    LeaseSnapshot.read(zk, leaseName).whenComplete((now, error) -> {
      if (error != null) {
        log.debug("observation of '{}': read failed ({}); trying again", leaseName, error.toString());
        retry();
        return;
      }
      compare(zk, now);
    });
  }

  private void retry() {
    synchronized (this) {
      reading = false;
    }
    timers.schedule(this::refresh, RETRY_NANOS);
  }

  /** Reports what changed from the last reported state to {@code now}; then reads again if asked. */
  private void compare(ZooKeeper zk, LeaseSnapshot now) {
    LeaseSnapshot was;
    boolean afterReconnect;
    int seen;
    synchronized (this) {
      was = base;
      seen = reconnects;
      afterReconnect = seen != reconnectsCompared;
    }
    if (was == null) {
      emit(LeaseEvent.Type.CURRENT, now.holding(), "");
      done(now, seen);
      return;
    }
    long token = was.token();
    if (token != 0 && token == now.token()) {
      done(now, seen); // the same tenure: its holder node never went
      return;
    }
    // A lease node that did not exist counts as version 0: creating it (data: no tenure) is no
    // change of the lease.
    int steps = Math.max(now.leaseVersion(), 0) - Math.max(was.leaseVersion(), 0);
    if (token == 0) {
      if (now.holding().isEmpty()) {
        // Free before and now: a clean-up of an ended tenure's record changes the version once.
        if (steps == 0 || (steps == 1 && !afterReconnect && now.leasePzxid() == was.leasePzxid())) {
          done(now, seen);
        } else if (steps == 2 && now.released().isPresent() && now.leasePzxid() == now.leaseMzxid()) {
          // A whole tenure began and was released before this read: two versions, the second
          // written by the release's own transaction, which recorded the tenure.
          Optional<LeaseHolding> tenure = now.released().map(
              r -> new LeaseHolding(r.holder(), r.token(), Optional.empty()));
          emit(LeaseEvent.Type.ACQUIRED, tenure, "");
          emit(LeaseEvent.Type.RELEASED, tenure, "");
          done(now, seen);
        } else {
          gap(now, seen, "the lease node changed " + steps + " times unseen");
        }
      } else if (steps == 1 && now.token() == now.leaseMzxid()) {
        emit(LeaseEvent.Type.ACQUIRED, now.holding(), "");
        done(now, seen);
      } else {
        gap(now, seen, "more than one change since the last read");
      }
      return;
    }
    LeaseHolding ended = was.holding().orElseThrow();
    if (now.holding().isEmpty()) {
      boolean releasedByItsTransaction =
          now.record().isEmpty() && now.leasePzxid() == now.leaseMzxid();
      if (steps == 1 && releasedByItsTransaction) {
        emit(LeaseEvent.Type.RELEASED, Optional.of(ended), "");
        done(now, seen);
      } else if (steps == 0 || (steps == 1 && now.record().isEmpty())) {
        // The holder node went without a release: its session ended (expiry) or someone deleted
        // it (revocation); the holder's own clean-up may have rewritten the record since.
        long session = was.record().map(ZNodes.TenureRecord::session).orElse(0L);
        LeaseSnapshot.exists(zk, ZNodes.sessionNode(session)).whenComplete((alive, error) -> {
          LeaseEvent.Type type = error == null && !alive ? LeaseEvent.Type.EXPIRED : LeaseEvent.Type.REVOKED;
          emit(type, Optional.of(ended), type == LeaseEvent.Type.REVOKED
              ? "zookeeper: the holder node was deleted while its session lived" : "");
          done(now, seen);
        });
      } else {
        gap(now, seen, "the lease node changed " + steps + " times unseen");
      }
      return;
    }
    if (steps == 1 && now.token() == now.leaseMzxid()) {
      emit(LeaseEvent.Type.TAKEN_OVER, now.holding(), "zookeeper: a new tenure replaced the record");
      done(now, seen);
    } else if (steps == 2 && now.token() == now.leaseMzxid() && !afterReconnect) {
      emit(LeaseEvent.Type.RELEASED, Optional.of(ended), "");
      emit(LeaseEvent.Type.ACQUIRED, now.holding(), "");
      done(now, seen);
    } else {
      gap(now, seen, "the lease node changed " + steps + " times unseen");
    }
  }

  private void gap(LeaseSnapshot now, int seen, String why) {
    emit(LeaseEvent.Type.GAP, now.holding(), "zookeeper: " + why + "; read again");
    done(now, seen);
  }

  private void emit(LeaseEvent.Type type, Optional<LeaseHolding> holding, String detail) {
    observation.emit(new LeaseEvent(type, leaseName, holding, detail));
  }

  private void done(LeaseSnapshot now, int seen) {
    boolean more;
    synchronized (this) {
      base = now;
      reconnectsCompared = seen;
      reading = false;
      more = again;
    }
    if (more) {
      refresh();
    }
  }

  private ZooKeeper zk() {
    try {
      return client.getZookeeperClient().getZooKeeper();
    } catch (Exception e) {
      return null;
    }
  }

  /** Ends the observation: the watch is removed and nothing more is reported. */
  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    client.getConnectionStateListenable().removeListener(this);
    ZooKeeper zk = zk();
    if (zk != null) {
      zk.removeWatches(path, this, WatcherType.Any, true, (rc, p, ctx) -> { }, null);
    }
  }
}
