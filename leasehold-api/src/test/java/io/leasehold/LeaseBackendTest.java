package io.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Backend lookup, with the two test providers registered in this module's test resources. */
@Tag("integration")
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
  void theCoresTlsSchemeNamesTheClientModuleToo() {
    assertThatThrownBy(() -> LeaseBackend.open("leaseholds://127.0.0.1:7000?ca=ca.pem"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageEndingWith("add the backend's module, io.leasehold:leasehold-client");
  }

  @Test
  void thePostgresqlSchemeNamesItsModuleAndAMistypedOneIsCorrected() {
    assertThatThrownBy(() -> LeaseBackend.open("postgresql://127.0.0.1:5432/db"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageEndingWith("add the backend's module, io.leasehold:leasehold-postgresql");
    assertThatThrownBy(() -> LeaseBackend.open("postgresq://127.0.0.1:5432/db"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageEndingWith("did you mean 'postgresql:'?");
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

  /** Observing and reading are optional: a backend that does not declare them says so at once. */
  @Test
  void aBackendWithoutObservationSaysSoNamingItself() {
    try (LeaseBackend backend = LeaseBackend.open("echo://host:1")) {
      assertThatThrownBy(() -> backend.observe("jobs", event -> {}))
          .isInstanceOf(UnsupportedOperationException.class)
          .hasMessage("observing leases is not supported by the echo://host:1 backend");
      assertThatThrownBy(() -> backend.read("jobs"))
          .isInstanceOf(UnsupportedOperationException.class)
          .hasMessage("reading lease states is not supported by the echo://host:1 backend");
    }
  }

  @Test
  void eventsAndStatesPrintAndCopyAsDocumented() {
    LeaseHolding h = new LeaseHolding("node-1#0123456789abcdef", 7, java.util.Optional.empty());
    assertThat(h.owner()).isEqualTo("node-1");
    assertThat(new LeaseEvent(LeaseEvent.Type.ACQUIRED, "jobs", java.util.Optional.of(h), ""))
        .hasToString("ACQUIRED jobs node-1#0123456789abcdef token 7");
    assertThat(new LeaseEvent(LeaseEvent.Type.CURRENT, "jobs", java.util.Optional.empty(), ""))
        .hasToString("CURRENT jobs free");
    java.util.Map<String, String> keys = new java.util.HashMap<>(java.util.Map.of("b", "2", "a", "1"));
    LeaseState state = new LeaseState("jobs", java.util.Optional.of(h), keys);
    keys.put("c", "3");
    assertThat(state.attached()).containsExactly(java.util.Map.entry("a", "1"), java.util.Map.entry("b", "2"));
  }
}
