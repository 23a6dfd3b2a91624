package io.leasehold.etcd;

import io.leasehold.spi.OpenObservations;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.CompactedException;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import io.leasehold.LeaseEvent;
import io.leasehold.LeaseHolding;
import io.leasehold.Scheduler;
import io.leasehold.spi.Observation;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One observation of a named lease on etcd: reads the record (its create revision is the token),
 * reports it as the current state, then watches the record's key from the revision after the read.
 *
 * <p><b>Resuming.</b> The observation keeps the revision after the last event it took itself;
 * when the watch fails (jetcd reports every failure before resuming by itself) it drops jetcd's
 * stream and opens a new watch from that revision, so a reconnect misses nothing while etcd still
 * has the history. When etcd compacted it meanwhile, the watch is cancelled with a {@link
 * CompactedException}: the record is read again and reported as a {@link LeaseEvent.Type#GAP}.
 *
 * <p><b>Why a record went.</b> etcd does not say why a key was deleted. The release deletes the
 * record and its guard in one transaction, and so does etcd when the tenure's etcd lease expires;
 * an operator's {@code etcdctl del} deletes only the record. So for each delete: the guard read
 * at the delete's revision still there (same create revision) → {@code REVOKED}; else the
 * tenure's etcd lease gone → {@code EXPIRED}; else {@code RELEASED}. (A holder that releases and
 * at once closes its backend, which revokes the etcd lease, may be reported {@code EXPIRED}.)
 * These look-ups are chained, so events are still delivered in store order.
 */
final class EtcdObservation implements OpenObservations.StoreWatch {

  private static final Logger log = LoggerFactory.getLogger(EtcdObservation.class);
  private static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  private final Client client;
  private final Scheduler timers;
  private final Observation observation;
  private final ByteSequence key;
  private final ByteSequence guard;
  private long nextRevision; // guarded by this
  /** The token of the tenure last taken in, 0 while free. */
  private long currentToken; // guarded by this
  private Watch.Watcher watcher; // guarded by this: the running watch; events of others are ignored
  private boolean closed; // guarded by this
  /** The events in store order: each one is delivered after the look-ups of those before it. */
  private CompletableFuture<Void> tail = CompletableFuture.completedFuture(null); // guarded by this

  EtcdObservation(Client client, Scheduler timers, Observation observation, String key, String guard) {
    this.client = client;
    this.timers = timers;
    this.observation = observation;
    this.key = EtcdLeaseStore.bytes(key);
    this.guard = EtcdLeaseStore.bytes(guard);
  }

  /** Reads the current state, reports it, and starts watching from there. */
  @Override
  public void start() {
    read(LeaseEvent.Type.CURRENT);
  }

  private void read(LeaseEvent.Type type) {
    client.getKVClient().get(key).whenComplete((response, error) -> {
      synchronized (this) {
        if (closed) {
          return;
        }
        if (error != null) {
          log.debug("observation of '{}': read failed ({}); trying again", observation.name(), error.toString());
          timers.schedule(() -> read(type), RETRY_NANOS);
          return;
        }
        Optional<LeaseHolding> holding = response.getKvs().isEmpty()
            ? Optional.empty() : Optional.of(EtcdLeaseStore.holding(response.getKvs().get(0)));
        currentToken = holding.map(LeaseHolding::token).orElse(0L);
        String detail = type == LeaseEvent.Type.GAP
            ? "etcd no longer had the changes since revision " + nextRevision + " (compacted); read again"
            : "";
        LeaseEvent event = new LeaseEvent(type, observation.name(), holding, detail);
        tail = tail.thenRun(() -> observation.emit(event));
        nextRevision = response.getHeader().getRevision() + 1;
        open();
      }
    });
  }

  private synchronized void open() {
    if (closed) {
      return;
    }
    stopWatch();
    WatchOption option = WatchOption.builder().withPrevKV(true).withRevision(nextRevision).build();
    Watch.Watcher[] self = new Watch.Watcher[1];
    self[0] = client.getWatchClient().watch(key, option, Watch.listener(
        response -> handle(self[0], response),
        error -> failed(self[0], error),
        () -> failed(self[0], null)));
    watcher = self[0];
  }

  private synchronized void handle(Watch.Watcher which, WatchResponse response) {
    if (which == null || which != watcher || closed) {
      return; // a stream this observation already dropped (jetcd may have resumed it on its own)
    }
    for (WatchEvent e : response.getEvents()) {
      KeyValue kv = e.getKeyValue();
      if (kv.getModRevision() < nextRevision) {
        continue; // already taken in (never expected: the watch starts at nextRevision)
      }
      nextRevision = kv.getModRevision() + 1;
      if (e.getEventType() == WatchEvent.EventType.PUT) {
        if (kv.getCreateRevision() != currentToken) { // a rewrite of the same tenure is no change
          currentToken = kv.getCreateRevision();
          LeaseEvent event = new LeaseEvent(
              LeaseEvent.Type.ACQUIRED, observation.name(), Optional.of(EtcdLeaseStore.holding(kv)), "");
          tail = tail.thenRun(() -> observation.emit(event));
        }
      } else if (e.getEventType() == WatchEvent.EventType.DELETE) {
        currentToken = 0;
        KeyValue before = e.getPrevKV();
        if (before == null || before.getCreateRevision() == 0) {
          continue; // a delete of a key that did not exist
        }
        LeaseHolding ended = EtcdLeaseStore.holding(before);
        long revision = kv.getModRevision();
        tail = tail
            .thenCompose(ignored -> whyDeleted(before, revision))
            .thenAccept(type -> observation.emit(new LeaseEvent(type, observation.name(), Optional.of(ended),
                type == LeaseEvent.Type.REVOKED ? "etcd: the key was deleted at revision " + revision : "")));
      }
    }
  }

  /** Tells a release from an expiry from an operator's delete (see the class comment). */
  private CompletableFuture<LeaseEvent.Type> whyDeleted(KeyValue before, long revision) {
    return client.getKVClient()
        .get(guard, GetOption.builder().withRevision(revision).build())
        .thenCompose((GetResponse g) -> {
          boolean guardSurvived = !g.getKvs().isEmpty()
              && g.getKvs().get(0).getCreateRevision() == before.getCreateRevision();
          if (guardSurvived || before.getLease() == 0) {
            return CompletableFuture.completedFuture(LeaseEvent.Type.REVOKED);
          }
          return client.getLeaseClient().timeToLive(before.getLease(), io.etcd.jetcd.options.LeaseOption.DEFAULT)
              .thenApply(ttl -> ttl.getTTL() < 0 ? LeaseEvent.Type.EXPIRED : LeaseEvent.Type.RELEASED);
        })
        .exceptionally(error -> {
          log.debug("observation of '{}': could not tell why revision {} deleted the record ({})",
              observation.name(), revision, error.toString());
          return LeaseEvent.Type.REVOKED;
        });
  }

  /** The watch failed or ended: drop it and watch again from the revision after the last event. */
  private void failed(Watch.Watcher which, Throwable error) {
    boolean compacted = isCompacted(error);
    synchronized (this) {
      if (which == null || which != watcher || closed) {
        return;
      }
      stopWatch();
    }
    log.debug("observation of '{}' lost its watch ({}); {}", observation.name(),
        error == null ? "completed" : error.toString(), compacted ? "reading again" : "resuming");
    if (compacted) {
      read(LeaseEvent.Type.GAP);
    } else {
      timers.schedule(this::open, RETRY_NANOS);
    }
  }

  private static boolean isCompacted(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof CompactedException) {
        return true;
      }
    }
    return false;
  }

  private void stopWatch() {
    Watch.Watcher w = watcher;
    watcher = null;
    if (w != null) {
      w.close();
    }
  }

  /** Ends the observation: the watch is closed and nothing more is reported. */
  @Override
  public synchronized void close() {
    closed = true;
    stopWatch();
  }
}
