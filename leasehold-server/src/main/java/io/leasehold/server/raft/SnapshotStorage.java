package io.leasehold.server.raft;

import java.io.IOException;
import org.apache.ratis.statemachine.SnapshotRetentionPolicy;
import org.apache.ratis.statemachine.impl.SimpleStateMachineStorage;

/**
 * Ratis's single-file snapshot storage, with one lock more: {@link SnapshotWriter} puts a snapshot
 * in place (a rename, then its MD5) on its own thread, and Ratis cleans up old snapshots on the
 * applying thread; holding {@link #publishing()} for both, the clean-up never sees a snapshot file
 * whose MD5 is still to come.
 */
final class SnapshotStorage extends SimpleStateMachineStorage {

  private final Object publishing = new Object();

  /** {@return the lock held while a snapshot is put in place} */
  Object publishing() {
    return publishing;
  }

  @Override
  public void cleanupOldSnapshots(SnapshotRetentionPolicy policy) throws IOException {
    synchronized (publishing) {
      super.cleanupOldSnapshots(policy);
    }
  }
}
