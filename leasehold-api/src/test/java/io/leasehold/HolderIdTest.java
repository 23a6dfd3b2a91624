package io.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class HolderIdTest {

  @Test
  void everyIncarnationIsNew() {
    Set<HolderId> seen = new HashSet<>();
    for (int i = 0; i < 10_000; i++) {
      assertThat(seen.add(HolderId.newIncarnation("node-1"))).isTrue();
    }
  }

  @Test
  void theSameOwnerInAnotherIncarnationIsAnotherHolder() {
    HolderId first = HolderId.newIncarnation("node-1");
    HolderId restarted = HolderId.newIncarnation("node-1");

    assertThat(restarted.owner()).isEqualTo(first.owner());
    assertThat(restarted).isNotEqualTo(first);
  }

  @Test
  void parseReadsWhatToStringWrites() {
    HolderId id = HolderId.newIncarnation("pod#with#hashes");

    assertThat(id.toString()).matches("pod#with#hashes#[0-9a-f]{16}");
    assertThat(HolderId.parse(id.toString())).isEqualTo(id);
  }

  @Test
  void malformedIdsAreRejected() {
    assertThatThrownBy(() -> HolderId.parse("no-incarnation"))
        .hasMessageContaining("owner#0123456789abcdef");
    assertThatThrownBy(() -> HolderId.parse("#0123456789abcdef"))
        .hasMessageContaining("owner#0123456789abcdef");
    assertThatThrownBy(() -> new HolderId("o", "0123456789ABCDEF"))
        .hasMessageContaining("16 lower-case hex digits");
    assertThatThrownBy(() -> new HolderId(" ", "0123456789abcdef"))
        .hasMessage("owner must not be blank");
  }
}
