package io.leasehold.memory;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.LeaseBackend;
import org.junit.jupiter.api.Test;

/** The memory backend takes no address; one with a password is refused without showing it. */
class MemoryUriRedactionTest {

  @Test
  void aPasswordInTheUriIsNotShown() {
    assertThatThrownBy(() -> LeaseBackend.open("memory://alice:hunter2@localhost"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("alice:***@localhost")
        .hasMessageNotContaining("hunter2");
  }
}
