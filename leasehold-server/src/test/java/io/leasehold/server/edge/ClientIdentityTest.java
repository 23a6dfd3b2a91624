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
