package io.leasehold.server.edge;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** How identities are written and compared: one normal form, anonymous named, bad names refused. */
class ClientIdentityTest {

  @Test
  void subjectsAreNormalisedSoSpacingDoesNotMakeTwoIdentities() {
    assertThat(ClientIdentity.parse("CN=billing, O=Acme")).isEqualTo(ClientIdentity.parse("CN=billing,O=Acme"));
    assertThat(ClientIdentity.parse("CN=billing, O=Acme").toString()).isEqualTo("CN=billing,O=Acme");
    assertThat(ClientIdentity.parse("CN=billing")).isNotEqualTo(ClientIdentity.parse("CN=payroll"));
  }

  /**
   * {@code openssl req -subj "/CN=admin/O=Acme"} lists CN first, and RFC 2253 writes the last
   * first: the certificate's identity was {@code "O=Acme,CN=admin"} while the docs (and people)
   * write {@code "CN=admin,O=Acme"}, so a root identity written that way never matched, and the
   * root cannot be changed: the cluster had to be made anew. Both orders are one identity now.
   */
  @Test
  void theOrderOfASubjectsAttributesMakesNoOtherIdentity() throws Exception {
    assertThat(ClientIdentity.parse("O=Acme,CN=admin")).isEqualTo(ClientIdentity.parse("CN=admin,O=Acme"));
    assertThat(ClientIdentity.parse("O=Acme, OU=ops, CN=admin")).hasToString("CN=admin,O=Acme,OU=ops");
    // A certificate made as openssl makes it: CN first in the subject.
    io.leasehold.server.Certificates.Authority ca =
        io.leasehold.server.Certificates.Authority.create("order CA", java.time.Duration.ofDays(1));
    java.security.cert.X509Certificate cert =
        ca.issue("admin,O=Acme", java.util.List.of(), java.time.Duration.ofDays(1)).certificate();
    assertThat(cert.getSubjectX500Principal().getName(javax.security.auth.x500.X500Principal.RFC2253))
        .as("what RFC 2253 writes for it").isEqualTo("O=Acme,CN=admin");
    assertThat(ClientIdentity.ofSubject(cert.getSubjectX500Principal())).isEqualTo(ClientIdentity.parse("CN=admin,O=Acme"));
    assertThat(ClientIdentity.parse("CN=admin,O=Other")).isNotEqualTo(ClientIdentity.parse("CN=admin,O=Acme"));
  }

  @Test
  void anonymousIsNamedAndStoredEmpty() {
    assertThat(ClientIdentity.parse("anonymous")).isSameAs(ClientIdentity.ANONYMOUS);
    assertThat(ClientIdentity.ANONYMOUS.stored()).isEmpty();
    assertThat(ClientIdentity.ANONYMOUS).hasToString("anonymous");
    assertThat(ClientIdentity.ofStored("")).isSameAs(ClientIdentity.ANONYMOUS);
    assertThat(ClientIdentity.current()).as("outside a call").isSameAs(ClientIdentity.ANONYMOUS);
    assertThat(ClientIdentity.of(null)).as("plaintext").isSameAs(ClientIdentity.ANONYMOUS);
  }

  @Test
  void aNameThatIsNoSubjectIsRefusedNamingTheForm() {
    assertThatThrownBy(() -> ClientIdentity.parse("billing"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("identity must be a certificate subject such as \"CN=billing,O=Acme\"");
    assertThatThrownBy(() -> ClientIdentity.parse(" "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("was empty");
  }
}
