package io.leasehold.etcd;

import static io.leasehold.etcd.SecuredEtcd.connected;
import static io.leasehold.etcd.SecuredEtcd.settings;
import static org.assertj.core.api.Assertions.assertThat;

import io.etcd.jetcd.Auth;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.auth.Permission;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.testkit.FileModes;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The backend against a real etcd with authentication on. The setup makes, through jetcd's Auth
 * client, the root user, a role with readwrite on the backend's namespace ({@code /leasehold/})
 * for user "alice", and a role with readwrite on {@code /other/} only for user "mallory"; then it
 * turns authentication on.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class EtcdAuthTest {

  private static final String ALICE_PASSWORD = "alice-s3cret";
  private static final String MALLORY_PASSWORD = "mallory-s3cret";

  @TempDir static Path dir;
  private static EtcdCluster cluster;
  private static Path alicePassword;
  private static Path malloryPassword;

  @BeforeAll
  static void startEtcdWithAuth() throws Exception {
    cluster = EtcdCluster.start(1);
    try (Client admin = Client.builder().endpoints(cluster.endpoint(0)).build()) {
      Auth auth = admin.getAuthClient();
      auth.userAdd(bytes("root"), bytes("root-s3cret")).get(30, TimeUnit.SECONDS);
      auth.roleAdd(bytes("root")).get(30, TimeUnit.SECONDS);
      auth.userGrantRole(bytes("root"), bytes("root")).get(30, TimeUnit.SECONDS);
      grantPrefix(auth, "leasehold-rw", "/leasehold/");
      grantPrefix(auth, "other-rw", "/other/");
      auth.userAdd(bytes("alice"), bytes(ALICE_PASSWORD)).get(30, TimeUnit.SECONDS);
      auth.userGrantRole(bytes("alice"), bytes("leasehold-rw")).get(30, TimeUnit.SECONDS);
      auth.userAdd(bytes("mallory"), bytes(MALLORY_PASSWORD)).get(30, TimeUnit.SECONDS);
      auth.userGrantRole(bytes("mallory"), bytes("other-rw")).get(30, TimeUnit.SECONDS);
      auth.authEnable().get(30, TimeUnit.SECONDS);
    }
    // As written by echo: one trailing line break, not part of the password.
    alicePassword = FileModes.ownerOnly(Files.writeString(dir.resolve("alice.password"), ALICE_PASSWORD + "\n"));
    malloryPassword = FileModes.ownerOnly(Files.writeString(dir.resolve("mallory.password"), MALLORY_PASSWORD + "\n"));
  }


  private static void grantPrefix(Auth auth, String role, String prefix) throws Exception {
    auth.roleAdd(bytes(role)).get(30, TimeUnit.SECONDS);
    String end = prefix.substring(0, prefix.length() - 1) + (char) (prefix.charAt(prefix.length() - 1) + 1);
    auth.roleGrantPermission(bytes(role), bytes(prefix), bytes(end), Permission.Type.READWRITE)
        .get(30, TimeUnit.SECONDS);
  }

  @AfterAll
  static void stopEtcd() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static String hostPort() {
    return "127.0.0.1:" + cluster.clientAddress(0).getPort();
  }

  @Test
  void theRightPasswordAcquiresAndReleases() throws Exception {
    String uri = "etcd://" + hostPort() + "?user=alice&password-file=" + alicePassword;
    char[] password = ALICE_PASSWORD.toCharArray();
    EtcdBackend.Builder builder = EtcdBackend.builder("etcd://" + hostPort()).user("alice").password(password);
    assertThat(builder.toString()).doesNotContain(ALICE_PASSWORD).contains("alice");
    try (LeaseBackend viaUri = connected(LeaseBackend.open(uri));
        EtcdBackend viaBuilder = connected(builder.build());
        Lease first = viaUri.newLease(settings("auth/job", "node-1"));
        Lease second = viaBuilder.newLease(settings("auth/job", "node-2"))) {
      assertThat(viaUri.uri()).isEqualTo(uri);
      assertThat(viaBuilder.toString() + viaBuilder.uri()).doesNotContain(ALICE_PASSWORD);
      assertThat(first.acquire().get(30, TimeUnit.SECONDS)).as("alice's first acquire").isTrue();
      long token = first.fencingToken().orElseThrow();
      assertThat(second.acquire().get(30, TimeUnit.SECONDS)).as("while node-1 holds").isFalse();
      first.release().get(30, TimeUnit.SECONDS);
      assertThat(second.acquire().get(30, TimeUnit.SECONDS)).as("after the release").isTrue();
      assertThat(second.fencingToken().orElseThrow()).isGreaterThan(token);
      second.release().get(30, TimeUnit.SECONDS);
    }
  }

  @Test
  void aWrongPasswordFailsTheAcquireNamingEtcdAndTheUser() throws Exception {
    Path wrong = FileModes.ownerOnly(Files.writeString(dir.resolve("wrong.password"), "not-alices-password"));
    LeaseStoreUnavailableException refused =
        refusedAcquire("etcd://" + hostPort() + "?user=alice&password-file=" + wrong, "auth/wrong-password");
    assertThat(refused.getMessage())
        .contains("etcd (etcd://" + hostPort())
        .contains("did not accept the password of user 'alice'")
        .contains("check user= and the password in password-file=")
        .doesNotContain("not-alices-password");
    assertNothingHeld("auth/wrong-password");
  }

  @Test
  void aUserWhoseRolesLackTheNamespaceIsRefusedAndHoldsNothing() {
    LeaseStoreUnavailableException refused =
        refusedAcquire(
            "etcd://" + hostPort() + "?user=mallory&password-file=" + malloryPassword, "auth/no-right");
    assertThat(refused.getMessage())
        .contains("etcd (etcd://" + hostPort())
        .contains("denied user 'mallory' permission")
        .contains("readwrite on the key prefix /leasehold/")
        .doesNotContain(MALLORY_PASSWORD);
    assertNothingHeld("auth/no-right");
  }

  @Test
  void noUserWhereEtcdRequiresOneSaysSo() {
    LeaseStoreUnavailableException refused = refusedAcquire("etcd://" + hostPort(), "auth/no-user");
    assertThat(refused.getMessage()).contains("has authentication on").contains("give user= and password-file=");
    assertNothingHeld("auth/no-user");
  }

  private static LeaseStoreUnavailableException refusedAcquire(String uri, String name) {
    try (LeaseBackend backend = LeaseBackend.open(uri); Lease lease = backend.newLease(settings(name, "node-1"))) {
      Throwable failure = null;
      try {
        lease.acquire().join();
      } catch (CompletionException e) {
        failure = e.getCause();
      }
      assertThat(failure).as("acquire through %s", uri).isInstanceOf(LeaseStoreUnavailableException.class);
      assertThat(lease.checkAlive()).isFalse();
      assertThat(lease.fencingToken()).isEmpty();
      return (LeaseStoreUnavailableException) failure;
    }
  }

  private static void assertNothingHeld(String name) {
    try (EtcdBackend alice = EtcdBackend.builder("etcd://" + hostPort()).user("alice").passwordFile(alicePassword).build()) {
      assertThat(alice.read(name).get(30, TimeUnit.SECONDS).holding()).as("holder of %s in etcd", name).isEmpty();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
