package io.leasehold.zookeeper;

import io.leasehold.testkit.ProcessPauseSuite;
import java.time.Duration;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Scenario (d) with a real pause: the holder is a child JVM frozen with {@code SIGSTOP}, so every
 * one of its threads stops, ZooKeeper's own heartbeat threads included, and its session expires
 * on a real server.
 */
@Tag("integration")
class ZooKeeperProcessPauseTest extends ProcessPauseSuite {

  private static final String CHROOT = "/process-pause";
  @RegisterExtension static final StandaloneZooKeeper zk = new StandaloneZooKeeper(CHROOT);


  @Override
  protected String backendUri() {
    return ZooKeeperServers.uri("127.0.0.1:" + zk.server().getPort(), CHROOT, ttl());
  }

  @Override
  protected Duration ttl() {
    return Duration.ofSeconds(1);
  }
}
