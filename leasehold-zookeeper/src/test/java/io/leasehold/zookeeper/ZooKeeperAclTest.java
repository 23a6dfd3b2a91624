package io.leasehold.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseException;
import io.leasehold.testkit.FileModes;
import io.leasehold.testkit.SuiteSettings;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.TestingServer;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Digest authentication and ACLs against a real server: with {@code user=} every znode the backend
 * creates is its identity's only, so a client without the credentials can neither end a holder's
 * tenure nor make a node under the lease; without {@code user=} the znodes stay open, as before.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class ZooKeeperAclTest {

  private static final String CHROOT = "/acl";
  private static final String OPEN_CHROOT = "/acl-open";
  private static final Duration TTL = Duration.ofSeconds(2);
  private static TestingServer server;
  /** A client without credentials: anyone who can reach the port. */
  private static CuratorFramework intruder;
  /** A client with the backends' credentials, to read the ACLs (reading one needs READ). */
  private static CuratorFramework owner;
  @TempDir static Path dir;
  private static Path passwordFile;
  private static Path wrongPasswordFile;

  @BeforeAll
  static void startServer() throws Exception {
    server = ZooKeeperServers.standalone();
    intruder = ZooKeeperServers.admin(server.getConnectString());
    ZooKeeperServers.createPath(intruder, CHROOT);
    ZooKeeperServers.createPath(intruder, OPEN_CHROOT);
    passwordFile = dir.resolve("password");
    FileModes.ownerOnly(Files.writeString(passwordFile, "s3cret:with colon\n", StandardCharsets.UTF_8));
    wrongPasswordFile = dir.resolve("wrong-password");
    FileModes.ownerOnly(Files.writeString(wrongPasswordFile, "guessed", StandardCharsets.UTF_8));
    owner = org.apache.curator.framework.CuratorFrameworkFactory.builder()
        .connectString(server.getConnectString())
        .retryPolicy(new org.apache.curator.retry.RetryNTimes(20, 100))
        .authorization("digest", "billing:s3cret:with colon".getBytes(StandardCharsets.UTF_8))
        .build();
    owner.start();
    owner.blockUntilConnected(30, TimeUnit.SECONDS);
  }

  @AfterAll
  static void stopServer() {
    ZooKeeperServers.closeQuietly(owner);
    ZooKeeperServers.closeQuietly(intruder);
    ZooKeeperServers.closeQuietly(server);
  }

  private static LeaseBackend open(String chroot, String parameters) {
    return LeaseBackend.open(
        ZooKeeperServers.uri("127.0.0.1:" + server.getPort(), chroot, TTL) + parameters);
  }

  private static String credentials(Path password) {
    return "&user=billing&password-file=" + password;
  }

  @Test
  void holdersWithTheCredentialsContendAndOthersCanNeitherDeleteNorCreate() throws Exception {
    try (LeaseBackend a = open(CHROOT, credentials(passwordFile));
        LeaseBackend b = open(CHROOT, credentials(passwordFile))) {
      Lease first = a.newLease(SuiteSettings.forTtl("orders", "a", TTL).build());
      Lease second = b.newLease(SuiteSettings.forTtl("orders", "b", TTL).build());
      assertThat(first.acquire().join()).isTrue();
      assertThat(second.acquire().join()).as("held by the first").isFalse();
      first.release().join();
      assertThat(second.acquire().join()).as("released by the first").isTrue();
      long token = second.fencingToken().orElseThrow();

      String leaseNode = CHROOT + ZNodes.leaseNode("orders");
      String holderNode = CHROOT + ZNodes.holderNode("orders");
      assertThatThrownBy(() -> intruder.delete().forPath(holderNode))
          .as("deleting the holder node needs DELETE on the lease node")
          .isInstanceOf(KeeperException.NoAuthException.class);
      assertThatThrownBy(() -> intruder.create().withMode(CreateMode.EPHEMERAL)
              .forPath(leaseNode + "/holder2"))
          .as("creating under the lease")
          .isInstanceOf(KeeperException.NoAuthException.class);
      assertThatThrownBy(() -> intruder.setData().forPath(leaseNode, new byte[0]))
          .as("rewriting the tenure record")
          .isInstanceOf(KeeperException.NoAuthException.class);
      String sessionNode =
          CHROOT + ZNodes.sessionNode(((ZooKeeperBackend) b).zooKeeper().getSessionId());
      assertThatThrownBy(() -> intruder.delete().forPath(sessionNode))
          .as("deleting the holder's session node (which would free the name at once)")
          .isInstanceOf(KeeperException.NoAuthException.class);

      for (String path : List.of(CHROOT + ZNodes.ROOT, CHROOT + ZNodes.LEASES,
          CHROOT + ZNodes.SESSIONS, leaseNode, holderNode)) {
        assertThatThrownBy(() -> intruder.getACL().forPath(path))
            .as("reading the ACL of %s needs READ", path)
            .isInstanceOf(KeeperException.NoAuthException.class);
        assertThat(owner.getACL().forPath(path))
            .as("the ACL of %s: the digest identity only", path)
            .singleElement()
            .satisfies(acl -> {
              assertThat(acl.getId().getScheme()).isEqualTo("digest");
              assertThat(acl.getId().getId()).startsWith("billing:");
              assertThat(acl.getPerms()).isEqualTo(ZooDefs.Perms.ALL);
            });
      }
      assertThat(owner.checkExists().forPath(holderNode)).as("the holder node survives").isNotNull();
      assertThat(second.acquire().join()).as("a renewal: the tenure survives").isTrue();
      assertThat(second.fencingToken()).hasValue(token);
      assertThat(second.checkAlive()).isTrue();
    }
  }

  @Test
  void aWrongPasswordIsRefusedWithAMessageNamingTheUserAndThePasswordFile() {
    // The right identity makes the tree (and a lease node) first: opened together, the wrong one
    // could make /leasehold itself on connecting, and own it.
    try (LeaseBackend right = open(CHROOT, credentials(passwordFile))) {
      Lease lease = right.newLease(SuiteSettings.forTtl("wrong-password", "right", TTL).build());
      assertThat(lease.acquire().join()).isTrue();
      lease.release().join();
    }
    try (LeaseBackend wrong = open(CHROOT, credentials(wrongPasswordFile))) {
      Lease other = wrong.newLease(SuiteSettings.forTtl("wrong-password", "wrong", TTL).build());
      assertThatThrownBy(() -> other.acquire().join())
          .isInstanceOf(CompletionException.class)
          .cause()
          .isInstanceOf(LeaseException.class)
          .hasMessageContaining("NOAUTH")
          .hasMessageContaining("user 'billing'")
          .hasMessageContaining("password-file '" + wrongPasswordFile + "'")
          .hasMessageNotContaining("guessed")
          .hasMessageNotContaining("s3cret");
    }
  }

  @Test
  void withoutCredentialsTheZnodesStayOpenAsBefore() throws Exception {
    try (LeaseBackend open = open(OPEN_CHROOT, "")) {
      Lease lease = open.newLease(SuiteSettings.forTtl("open", "o", TTL).build());
      assertThat(lease.acquire().join()).isTrue();
      for (String path : List.of(OPEN_CHROOT + ZNodes.leaseNode("open"),
          OPEN_CHROOT + ZNodes.holderNode("open"))) {
        List<ACL> acl = intruder.getACL().forPath(path);
        assertThat(acl).as(path).isEqualTo(ZooDefs.Ids.OPEN_ACL_UNSAFE);
      }
    }
  }
}
