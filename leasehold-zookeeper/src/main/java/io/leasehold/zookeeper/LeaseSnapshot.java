package io.leasehold.zookeeper;

import io.leasehold.LeaseHolding;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

/**
 * A lease as ZooKeeper holds it at one zxid: the lease node's stat and tenure record, and its
 * holder node (the holding: holder, token = the node's {@code czxid}, since = its {@code ctime}).
 * Read with one read-only {@code multi}, so both nodes are seen at the same point.
 *
 * @param leaseVersion the lease node's data version, -1 when it does not exist; every tenure and
 *     every release changes it
 * @param leaseMzxid the zxid of the lease node's last data change
 * @param leasePzxid the zxid of the last change of its children
 * @param record the tenure record on the lease node, if any
 * @param released the tenure the last release recorded on the lease node, if that is its data
 * @param holding the holder node as a holding, empty when there is none
 */
record LeaseSnapshot(
    int leaseVersion,
    long leaseMzxid,
    long leasePzxid,
    Optional<ZNodes.TenureRecord> record,
    Optional<ZNodes.Released> released,
    Optional<LeaseHolding> holding) {

  /** The name of the znode, under the lease node, that holds attached key {@code key}. */
  static String attachedChild(String key) {
    return ATTACHED + key;
  }

  /** Attached keys are children {@code attached-<key>} of the lease node (never {@code holder}). */
  static final String ATTACHED = "attached-";

  static CompletableFuture<LeaseSnapshot> read(ZooKeeper zk, String leaseName) {
    String lease = ZNodes.leaseNode(leaseName);
    String holder = ZNodes.holderNode(leaseName);
    return multi(zk, List.of(Op.getData(lease), Op.getData(holder))).thenApply(results -> {
      int version = -1;
      long mzxid = 0;
      long pzxid = 0;
      Optional<ZNodes.TenureRecord> record = Optional.empty();
      Optional<ZNodes.Released> released = Optional.empty();
      if (results.get(0) instanceof OpResult.GetDataResult g) {
        released = ZNodes.Released.parse(g.getData());
        version = g.getStat().getVersion();
        mzxid = g.getStat().getMzxid();
        pzxid = g.getStat().getPzxid();
        record = ZNodes.TenureRecord.parse(g.getData());
      }
      Optional<LeaseHolding> holding = Optional.empty();
      if (results.get(1) instanceof OpResult.GetDataResult g) {
        holding = Optional.of(holding(g.getData(), g.getStat()));
      }
      return new LeaseSnapshot(version, mzxid, pzxid, record, released, holding);
    });
  }

  /**
   * Reads the holding and the keys attached to it: the snapshot and the lease node's children,
   * then the attached children together with the holder node again. Only children created after
   * the tenure began ({@code czxid} above its token) count, and only if the holder node is still
   * the same tenure's at that second read.
   */
  static CompletableFuture<io.leasehold.LeaseState> readState(ZooKeeper zk, String leaseName) {
    String lease = ZNodes.leaseNode(leaseName);
    String holder = ZNodes.holderNode(leaseName);
    return multi(zk, List.of(Op.getData(holder), Op.getChildren(lease))).thenCompose(first -> {
      if (!(first.get(0) instanceof OpResult.GetDataResult h)) {
        return CompletableFuture.completedFuture(
            new io.leasehold.LeaseState(leaseName, Optional.empty(), Map.of()));
      }
      LeaseHolding holding = holding(h.getData(), h.getStat());
      List<String> keys = new ArrayList<>();
      if (first.get(1) instanceof OpResult.GetChildrenResult c) {
        for (String child : c.getChildren()) {
          if (child.startsWith(ATTACHED)) {
            keys.add(child.substring(ATTACHED.length()));
          }
        }
      }
      List<Op> second = new ArrayList<>();
      second.add(Op.getData(holder));
      for (String key : keys) {
        second.add(Op.getData(lease + "/" + attachedChild(key)));
      }
      return multi(zk, second).thenApply(results -> {
        if (!(results.get(0) instanceof OpResult.GetDataResult again)
            || again.getStat().getCzxid() != holding.token()) {
          return new io.leasehold.LeaseState(leaseName, Optional.empty(), Map.of()); // ended meanwhile
        }
        Map<String, String> values = new TreeMap<>();
        for (int i = 0; i < keys.size(); i++) {
          if (results.get(i + 1) instanceof OpResult.GetDataResult v
              && v.getStat().getCzxid() > holding.token()) {
            values.put(keys.get(i), new String(v.getData(), java.nio.charset.StandardCharsets.UTF_8));
          }
        }
        return new io.leasehold.LeaseState(leaseName, Optional.of(holding), values);
      });
    });
  }

  static LeaseHolding holding(byte[] data, Stat stat) {
    String holder = ZNodes.HolderRecord.parse(data).map(r -> r.holder().toString())
        .orElse(data == null ? "" : new String(data, java.nio.charset.StandardCharsets.UTF_8));
    return new LeaseHolding(holder, stat.getCzxid(), Optional.of(Instant.ofEpochMilli(stat.getCtime())));
  }

  /** {@return the token of the holding, 0 when free} */
  long token() {
    return holding.map(LeaseHolding::token).orElse(0L);
  }

  static CompletableFuture<List<OpResult>> multi(ZooKeeper zk, List<Op> ops) {
    CompletableFuture<List<OpResult>> done = new CompletableFuture<>();
    zk.multi(ops, (rc, path, ctx, results) -> {
      if (results == null || (rc != 0 && results.isEmpty())) {
        done.completeExceptionally(new CompletionException(
            KeeperException.create(KeeperException.Code.get(rc), path)));
      } else {
        done.complete(results);
      }
    }, null);
    return done;
  }

  static CompletableFuture<Boolean> exists(ZooKeeper zk, String path) {
    CompletableFuture<Boolean> done = new CompletableFuture<>();
    zk.exists(path, false, (rc, p, ctx, stat) -> {
      if (rc == KeeperException.Code.OK.intValue()) {
        done.complete(true);
      } else if (rc == KeeperException.Code.NONODE.intValue()) {
        done.complete(false);
      } else {
        done.completeExceptionally(KeeperException.create(KeeperException.Code.get(rc), p));
      }
    }, null);
    return done;
  }
}
