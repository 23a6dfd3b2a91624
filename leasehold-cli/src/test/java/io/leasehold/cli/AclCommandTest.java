package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.server.AccessSettings;
import io.leasehold.server.Certificates;
import io.leasehold.server.LocalCluster;
import io.leasehold.server.Peer;
import io.leasehold.server.TlsConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code leasehold acl} against a real one-node cluster with mutual TLS and a root identity. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
@Tag("integration")
class AclCommandTest {

  private static final Duration VALID = Duration.ofDays(1);
  private static LocalCluster cluster;
  private static Path dir;

  @BeforeAll
  static void startCluster() {
    dir = DevCommandTest.freshDir("acl");
    Certificates.Authority ca = Certificates.Authority.create("acl CA", VALID);
    Certificates.writeCertificates(dir.resolve("ca.pem"), ca.certificate());
    ca.issue("node", List.of("127.0.0.1", "localhost"), VALID).writeTo(dir.resolve("node.pem"), dir.resolve("node-key.pem"));
    ca.issue("admin", List.of(), VALID).writeTo(dir.resolve("admin.pem"), dir.resolve("admin-key.pem"));
    ca.issue("billing", List.of(), VALID).writeTo(dir.resolve("billing.pem"), dir.resolve("billing-key.pem"));
    TlsConfig tls = TlsConfig.of(dir.resolve("node.pem"), dir.resolve("node-key.pem"), dir.resolve("ca.pem"));
    cluster =
        LocalCluster.start(1, 0, dir.resolve("data"), c -> c.withTls(tls).withAccess(AccessSettings.DEFAULT.withRootIdentity("CN=admin")));
  }

  @AfterAll
  static void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static String uri(String who) {
    return "leaseholds://" + cluster.peers().stream().map(Peer::clientEndpoint).collect(Collectors.joining(","))
        + "?ca=" + dir.resolve("ca.pem") + "&cert=" + dir.resolve(who + ".pem") + "&key=" + dir.resolve(who + "-key.pem");
  }

  @Test
  void grantListAndRevokeAnEntryAndANonAdminIsRefusedInOneLine() {
    // Retried while the node starts and writes its root identity.
    await("the cluster answers").atMost(Duration.ofSeconds(60)).until(() -> Cli.run("acl", "list", "--backend", uri("admin")).exitCode() == 0);

    Cli granted = Cli.run("acl", "grant", "CN=billing, O=Acme", "lease", "billing/", "--backend", uri("admin"));
    assertThat(granted.exitCode()).as(granted.err()).isZero();
    assertThat(granted.out()).contains("granted: CN=billing,O=Acme lease \"billing/\"");
    assertThat(Cli.run("acl", "grant", "CN=billing,O=Acme", "lease", "billing/", "--backend", uri("admin")).out())
        .contains("already granted");

    Cli list = Cli.run("acl", "list", "--backend", uri("admin"));
    assertThat(list.out()).contains("root: CN=admin (every right)", "CN=billing,O=Acme lease \"billing/\"");

    Cli refused = Cli.run("acl", "grant", "CN=billing", "admin", "--backend", uri("billing"));
    assertThat(refused.exitCode()).isEqualTo(ExitStatus.DENIED);
    assertThat(refused.err()).contains("permission denied", "identity \"CN=billing\"", "right \"admin\"").doesNotContain("\tat ");

    Cli rootRevoke = Cli.run("acl", "revoke", "CN=admin", "admin", "--backend", uri("admin"));
    assertThat(rootRevoke.exitCode()).isEqualTo(1);
    assertThat(rootRevoke.err()).contains("cannot be revoked");

    Cli revoked = Cli.run("acl", "revoke", "CN=billing,O=Acme", "lease", "billing/", "--backend", uri("admin"));
    assertThat(revoked.exitCode()).as(revoked.err()).isZero();
    assertThat(Cli.run("acl", "list", "--backend", uri("admin")).out()).doesNotContain("billing/");
    Cli again = Cli.run("acl", "revoke", "CN=billing,O=Acme", "lease", "billing/", "--backend", uri("admin"));
    assertThat(again.exitCode()).isEqualTo(1);
    assertThat(again.err()).contains("the ACL holds no entry");
  }

  /** The URI with the CA only: no client certificate, to a node that requires one. */
  private static String uriWithoutClientCertificate() {
    return "leaseholds://" + cluster.peers().stream().map(Peer::clientEndpoint).collect(Collectors.joining(","))
        + "?ca=" + dir.resolve("ca.pem");
  }

  private static String plainUri() {
    return "leasehold://" + cluster.peers().stream().map(Peer::clientEndpoint).collect(Collectors.joining(","));
  }

  private static List<String> lines(String text) {
    return text.lines().filter(l -> !l.isBlank()).toList();
  }

  @Test
  void aDenialUnderRunIsItsOwnExitStatusInOneLineNamingTheIdentityRightAndLease() {
    await("the cluster answers").atMost(Duration.ofSeconds(60)).until(() -> Cli.run("acl", "list", "--backend", uri("admin")).exitCode() == 0);

    // A right elsewhere, so that the refusal is about this lease (with none at all, it is about the session).
    assertThat(Cli.run("acl", "grant", "CN=billing", "read", "reports/", "--backend", uri("admin")).exitCode()).isZero();

    Cli run = Cli.run("run", "--backend", uri("billing"), "--lease", "orders", "--", "true");

    assertThat(run.exitCode()).as(run.err()).isEqualTo(ExitStatus.DENIED);
    assertThat(lines(run.err())).as(run.err()).hasSize(1);
    assertThat(run.err())
        .contains("permission denied", "identity \"CN=billing\"", "right \"lease\"", "\"orders\"")
        .doesNotContain("unavailable", "could not find out", "TLS", "PERMISSION_DENIED", "Exception");

    Cli waiting = Cli.run("run", "--backend", uri("billing"), "--lease", "orders", "--wait", "--", "true");
    assertThat(waiting.exitCode()).as("--wait does not wait for a right: " + waiting.err()).isEqualTo(ExitStatus.DENIED);
  }

  @Test
  void statusWithANonAdminCertificateShowsTheNodesAndSaysTheCountsNeedAdmin() {
    await("the cluster answers").atMost(Duration.ofSeconds(60)).until(() -> Cli.run("acl", "list", "--backend", uri("admin")).exitCode() == 0);

    Cli status = Cli.run("status", "--backend", uri("billing"));

    assertThat(status.exitCode()).as(status.out() + status.err()).isZero();
    assertThat(status.out()).doesNotContain("UNREACHABLE").contains("LEADER")
        .contains("counts not shown: identity \"CN=billing\" has no right \"admin\"");
  }

  @Test
  void noClientCertificateIsNamedInOneLine() {
    await("the cluster answers").atMost(Duration.ofSeconds(60)).until(() -> Cli.run("acl", "list", "--backend", uri("admin")).exitCode() == 0);

    Cli status = Cli.run("status", "--backend", uriWithoutClientCertificate(), "--timeout", "5s");
    Cli get = Cli.run("get", "x", "--backend", uriWithoutClientCertificate(), "--timeout", "5s");

    assertThat(status.exitCode()).isEqualTo(1);
    assertThat(status.out() + status.err())
        .contains("the node asks for a client certificate and the URI names none (add cert=FILE&key=FILE)")
        .doesNotContain("OpenSsl", "TLSV1_ALERT", "Exception");
    assertThat(get.exitCode()).isEqualTo(1);
    assertThat(lines(get.err())).as(get.err()).hasSize(1);
    assertThat(get.err())
        .contains("the node asks for a client certificate and the URI names none (add cert=FILE&key=FILE)")
        .doesNotContain("OpenSsl", "TLSV1_ALERT", "Exception");
  }

  @Test
  void plainStatusAgainstATlsClusterSaysItSpeaksTlsAndWhatToPass() {
    await("the cluster answers").atMost(Duration.ofSeconds(60)).until(() -> Cli.run("acl", "list", "--backend", uri("admin")).exitCode() == 0);

    Cli status = Cli.run("status", "--backend", plainUri(), "--timeout", "2s");

    assertThat(status.exitCode()).isEqualTo(1);
    assertThat(status.err())
        .contains("speaks TLS", "leaseholds://", "ca=FILE&cert=FILE&key=FILE")
        .doesNotContain("Is the cluster running");
  }
}
