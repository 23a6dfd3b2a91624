package io.leasehold.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.BackendUris;
import io.leasehold.LeaseBackend;
import io.leasehold.server.Certificates;
import io.leasehold.testkit.FileModes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The TLS and credential parameters of {@code etcd://} and {@code etcds://} URIs and of the
 * builder: each bad one is refused naming the parameter (and its file), before anything is opened
 * and without leaving a thread behind; a password never appears in a message. No etcd is needed.
 */
@Timeout(value = 1, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class EtcdSecureUriTest {

  @TempDir static Path dir;
  private static Path ca;
  private static Path cert;
  private static Path key;
  private static Path password;

  @BeforeAll
  static void makeFiles() throws Exception {
    Certificates.Authority authority = Certificates.Authority.create("test CA", Duration.ofHours(1));
    ca = dir.resolve("ca.pem");
    Certificates.writeCertificates(ca, authority.certificate());
    cert = dir.resolve("client.pem");
    key = dir.resolve("client-key.pem");
    authority.issue("client", List.of(), Duration.ofHours(1)).writeTo(cert, key);
    password = FileModes.ownerOnly(Files.writeString(dir.resolve("password"), "pw\n"));
  }

  @Test
  void badParametersAreRefusedNamingThemBeforeAnythingIsOpened() throws Exception {
    Path missing = dir.resolve("missing.pem");
    Path notPem = Files.writeString(dir.resolve("not.pem"), "hello");
    Path empty = FileModes.ownerOnly(Files.writeString(dir.resolve("empty.password"), "\n"));
    String tls = "etcds://127.0.0.1:2379?ca=" + ca;
    record Case(String uri, String says) {}
    List<Case> cases = List.of(
        new Case("etcds://127.0.0.1:2379?ca=" + missing, "ca=" + missing + ": the file does not exist"),
        new Case("etcds://127.0.0.1:2379?ca=" + dir, "ca=" + dir + ": not a readable file"),
        new Case("etcds://127.0.0.1:2379?ca=" + notPem, "ca=" + notPem + ": "),
        new Case(tls + "&cert=" + missing + "&key=" + key, "cert=" + missing + ": the file does not exist"),
        new Case(tls + "&cert=" + cert + "&key=" + missing, "key=" + missing + ": the file does not exist"),
        new Case(tls + "&cert=" + cert + "&key=" + ca, "key=" + ca),
        new Case(tls + "&key=" + key, "key= needs cert="),
        new Case(tls + "&cert=" + cert, "cert= needs key="),
        new Case("etcds://127.0.0.1:2379", "an etcds:// URI needs ca=FILE"),
        new Case("etcd://127.0.0.1:2379?ca=" + ca, "ca=, cert= and key= are for TLS"),
        new Case(tls + "&tls=on", "unknown option 'tls'"),
        new Case(tls + "&ca=" + ca, "ca= is given twice"),
        new Case(tls + "&cert=", "cert= needs a value"),
        new Case("etcd://127.0.0.1:2379?user=alice", "user=alice needs password-file=FILE"),
        new Case("etcd://127.0.0.1:2379?password-file=" + password, "password-file= needs user="),
        new Case("etcd://127.0.0.1:2379?user=alice&password-file=" + missing,
            "password-file=" + missing + ": the file does not exist"),
        new Case("etcd://127.0.0.1:2379?user=alice&password-file=" + empty,
            "password-file=" + empty + ": the file is empty"),
        new Case("etcd://127.0.0.1:2379?user=alice&password=hunter2", "password= is not accepted in a URI"));
    Set<String> before = leaseholdThreads();
    for (Case c : cases) {
      assertThatThrownBy(() -> LeaseBackend.open(c.uri))
          .as(c.uri)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(c.says)
          .hasMessageNotContaining("hunter2");
    }
    assertThat(leaseholdThreads()).as("threads after the refused opens").isEqualTo(before);
  }

  @Test
  void theBuilderTakesTheFilesAndRefusesAParameterGivenTwice() {
    assertThatThrownBy(() -> EtcdBackend.builder("etcds://127.0.0.1:2379?ca=" + ca).ca(ca).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ca is given both in the URI and to the builder");
    assertThatThrownBy(() -> EtcdBackend.builder("etcd://127.0.0.1:2379").ca(ca).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("are for TLS");
    assertThatThrownBy(() -> EtcdBackend.builder("etcd://127.0.0.1:2379").password("hunter2".toCharArray()).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("needs user=")
        .hasMessageNotContaining("hunter2");
    assertThatThrownBy(
            () -> EtcdBackend.builder("etcd://127.0.0.1:2379").user("alice").passwordFile(password)
                .password("hunter2".toCharArray()).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("either as password-file or as password(...)");
    EtcdBackend.Builder b = EtcdBackend.builder("etcd://127.0.0.1:2379").user("alice").password("hunter2".toCharArray());
    assertThat(b.toString()).contains("user=alice").doesNotContain("hunter2");
  }

  @Test
  void fileNamesAreEscapedAndTheCanonicalFormParsesToTheSame() {
    EtcdUri uri = EtcdUri.parse(
        "ETCDS://h:1?ca=/a%20b/c%26a.pem&cert=c.pem&key=k.pem&user=al%C3%AFce&password-file=/p%25w&namespace=/x");
    assertThat(uri.secure()).isTrue();
    assertThat(uri.ca()).isEqualTo(Path.of("/a b/c&a.pem"));
    assertThat(uri.user()).isEqualTo("al\u00efce");
    assertThat(uri.passwordFile()).isEqualTo(Path.of("/p%w"));
    assertThat(uri.canonical())
        .isEqualTo("etcds://h:1?namespace=/x&ca=/a%20b/c%26a.pem&cert=c.pem&key=k.pem&user=al\u00efce&password-file=/p%25w");
    assertThat(EtcdUri.parse(uri.canonical())).isEqualTo(uri);
    assertThat(BackendUris.redacted("etcd://h:1?user=a&password=hunter2&x=1")).isEqualTo("etcd://h:1?user=a&password=***&x=1");
  }


  private static Set<String> leaseholdThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(Thread::isAlive)
        .map(Thread::getName)
        .filter(n -> n.startsWith("leasehold-etcd") || n.startsWith("vert.x") || n.startsWith("jetcd"))
        .collect(Collectors.toSet());
  }
}
