package io.leasehold.postgresql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.LeaseBackend;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A {@code user:password@} part in a PostgreSQL URI is refused; the refusal keeps the user and
 * hides the password, however the password is written.
 */
class PostgresUriRedactionTest {

  @ParameterizedTest
  @ValueSource(strings = {
      "postgresql://alice:hunter2@127.0.0.1:5432/db",
      "postgresql://alice:hun/ter2@127.0.0.1:5432/db",
      "postgresql://alice:hun?ter2@127.0.0.1:5432/db",
      "postgresql://127.0.0.1:5432,alice:hunter2@10.0.0.2/db?schema=Bad"})
  void aPasswordInTheAuthorityIsRefusedWithoutBeingShown(String uri) {
    assertThatThrownBy(() -> PostgresUri.parse(uri))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("credentials must not be in the URI")
        .hasMessageContaining(":***@")
        .hasMessageNotContaining("hun")
        .hasMessageNotContaining("ter2");
    assertThatThrownBy(() -> LeaseBackend.open(uri))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageNotContaining("hun")
        .hasMessageNotContaining("ter2");
    assertThat(PostgresBackend.builder(uri).toString()).contains(":***@").doesNotContain("ter2");
  }
}
