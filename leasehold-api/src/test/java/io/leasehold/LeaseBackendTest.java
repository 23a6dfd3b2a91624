package io.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** Backend lookup, with the two test providers registered in this module's test resources. */
class LeaseBackendTest {

  @Test
  void theProviderOfTheSchemeOpensTheUri() {
    try (LeaseBackend backend = LeaseBackend.open("Echo://host:1,host:2?x=y")) {
      assertThat(backend.uri()).isEqualTo("Echo://host:1,host:2?x=y");
    }
  }

  @Test
  void anUnknownSchemeNamesTheAvailableOnesAndTheModuleToAdd() {
    assertThatThrownBy(() -> LeaseBackend.open("etcd://127.0.0.1:2379"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "no Leasehold backend for scheme 'etcd' is on the class path or module path"
                + " (available: echo, twin); add the backend's module, io.leasehold:leasehold-etcd");
  }

  @Test
  void theCoreSchemeNamesTheClientModule() {
    assertThatThrownBy(() -> LeaseBackend.open("leasehold://127.0.0.1:7000"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageEndingWith("add the backend's module, io.leasehold:leasehold-client");
  }

  @Test
  void aUriWithoutASchemeIsRejected() {
    assertThatThrownBy(() -> LeaseBackend.open("127.0.0.1:2379"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("backend URI must start with a scheme");
    assertThatThrownBy(() -> LeaseBackend.open(""))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void twoProvidersOfOneSchemeAreAnError() {
    assertThatThrownBy(() -> LeaseBackend.open("twin:"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("more than one Leasehold backend serves scheme 'twin'");
  }
}
