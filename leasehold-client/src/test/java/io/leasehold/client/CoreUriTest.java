package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.server.Certificates;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The core URI's TLS parameters: each mistake named, before anything is opened. */
class CoreUriTest {

  @TempDir static Path dir;
  static Path ca;
  static Path cert;
  static Path key;

  @BeforeAll
  static void makeFiles() {
    Certificates.Authority authority = Certificates.Authority.create("uri test CA", Duration.ofDays(1));
    ca = dir.resolve("ca.pem");
    cert = dir.resolve("client.pem");
    key = dir.resolve("client-key.pem");
    Certificates.writeCertificates(ca, authority.certificate());
    authority.issue("client", List.of(), Duration.ofDays(1)).writeTo(cert, key);
  }

  @Test
  void aPlainUriIsPlaintextAndASecureOneCarriesItsFiles() {
    CoreTarget plain = CoreBackendProvider.target("leasehold://127.0.0.1:7000,127.0.0.1:7002");
    assertThat(plain.secure()).isFalse();
    assertThat(plain.endpoints()).hasSize(2);

    CoreTarget secure = CoreBackendProvider.target("leaseholds://127.0.0.1:7000/?ca=" + ca + "&cert=" + cert + "&key=" + key);
    assertThat(secure.secure()).isTrue();
    assertThat(secure.tls().ca()).isEqualTo(ca);
    assertThat(secure.tls().cert()).hasValue(cert);

    CoreTarget serverOnly = CoreBackendProvider.target("leaseholds://127.0.0.1:7000?ca=" + ca);
    assertThat(serverOnly.tls().cert()).isEmpty();
  }

  /** A file name's escapes are undone as every backend's parser does ({@code UriEscapes}). */
  @Test
  void aFileNameMayHoldEscapedCharacters() throws Exception {
    Path odd = Files.createDirectories(dir.resolve("a&b ü+c"));
    Path copy = Files.copy(ca, odd.resolve("ca.pem"));
    String escaped = dir + "/a%26b%20%C3%BC+c/ca.pem";
    assertThat(CoreBackendProvider.target("leaseholds://127.0.0.1:7000?ca=" + escaped).tls().ca()).isEqualTo(copy);
  }

  @Test
  void eachBadParameterIsNamed() {
    String hosts = "leaseholds://127.0.0.1:7000";
    assertThatThrownBy(() -> CoreBackendProvider.target(hosts))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("needs ca=FILE");
    assertThatThrownBy(() -> CoreBackendProvider.target(hosts + "?ca=" + dir.resolve("missing.pem")))
        .hasMessageContaining("ca=" + dir.resolve("missing.pem") + ": the file does not exist");
    assertThatThrownBy(() -> CoreBackendProvider.target(hosts + "?ca=" + ca + "&key=" + key))
        .hasMessageContaining("key= needs cert=");
    assertThatThrownBy(() -> CoreBackendProvider.target(hosts + "?ca=" + ca + "&cert=" + cert))
        .hasMessageContaining("cert= needs key=");
    assertThatThrownBy(() -> CoreBackendProvider.target(hosts + "?ca=" + ca + "&tls=true"))
        .hasMessageContaining("unknown parameter 'tls'");
    assertThatThrownBy(() -> CoreBackendProvider.target(hosts + "?ca=" + ca + "&ca=" + ca))
        .hasMessageContaining("parameter ca is given twice");
    assertThatThrownBy(() -> CoreBackendProvider.target(hosts + "?ca="))
        .hasMessageContaining("parameter ca in core URI")
        .hasMessageContaining("needs a file");
    assertThatThrownBy(() -> CoreBackendProvider.target(hosts + "?ca=" + key))
        .hasMessageContaining("ca=" + key + ": not a PEM certificate file");
    assertThatThrownBy(() -> CoreBackendProvider.target(hosts + "?ca=" + ca + "&cert=" + cert + "&key=" + ca))
        .hasMessageContaining("key=" + ca);
    assertThatThrownBy(() -> CoreBackendProvider.target(hosts + "?ca=%zz"))
        .hasMessageContaining("parameter ca in core URI")
        .hasMessageContaining("has a '%' not followed by two hex digits");
    assertThatThrownBy(() -> CoreBackendProvider.target(hosts + "?ca=%C3%28"))
        .hasMessageContaining("has %-escapes that are not UTF-8");
    assertThatThrownBy(() -> CoreBackendProvider.target("leasehold://127.0.0.1:7000?ca=" + ca))
        .hasMessageContaining("a leasehold:// URI takes no options; TLS parameters (ca, cert, key) go with leaseholds://");
  }

  @Test
  void aSecureUriOpensThroughTheRegistry() throws Exception {
    Path empty = Files.createTempFile(dir, "empty", ".pem");
    assertThatThrownBy(() -> io.leasehold.LeaseBackend.open("leaseholds://127.0.0.1:7000?ca=" + empty))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ca=" + empty);
  }
}
