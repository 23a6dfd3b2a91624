package io.leasehold.postgresql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.testkit.FileModes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
@Tag("integration")
class PostgresUriTest {

  @Test
  void hostsDatabaseAndParametersAreParsed() {
    PostgresUri uri = PostgresUri.parse("postgresql://db1:5433,db2,[::1]:6000/app%20db?schema=locks"
        + "&user=lease_user&password-file=/run/secrets/pg&sslmode=verify-full&sslrootcert=/etc/ca.pem"
        + "&create-schema=false&connections=4");
    assertThat(uri.hosts()).isEqualTo(List.of("db1:5433", "db2:5432", "[::1]:6000"));
    assertThat(uri.database()).isEqualTo("app db");
    assertThat(uri.schema()).isEqualTo("locks");
    assertThat(uri.user()).isEqualTo("lease_user");
    assertThat(uri.passwordFile()).isEqualTo(Path.of("/run/secrets/pg"));
    assertThat(uri.sslMode()).isEqualTo("verify-full");
    assertThat(uri.sslRootCert()).isEqualTo(Path.of("/etc/ca.pem"));
    assertThat(uri.createSchema()).isFalse();
    assertThat(uri.connections()).isEqualTo(4);
    assertThat(uri.jdbcUrl()).isEqualTo("jdbc:postgresql://db1:5433,db2:5432,[::1]:6000/app%20db");
    assertThat(uri.canonical()).isEqualTo(
        "postgresql://db1:5433,db2:5432,[::1]:6000/app%20db?schema=locks&user=lease_user");
  }

  @Test
  void defaultsAreTheStandardPortSchemaLeaseholdAndTwoConnections() {
    PostgresUri uri = PostgresUri.parse("PostgreSQL://localhost/app");
    assertThat(uri.hosts()).containsExactly("localhost:5432");
    assertThat(uri.schema()).isEqualTo("leasehold");
    assertThat(PostgresUri.parse("postgresql://h/db?schema=" + "s".repeat(56)).schema()).hasSize(56);
    assertThat(uri.createSchema()).isTrue();
    assertThat(uri.connections()).isEqualTo(2);
    assertThat(uri.user()).isNull();
    assertThat(uri.passwordFile()).isNull();
  }

  @Test
  void malformedUrisAreRejectedNamingTheField() {
    record Case(String uri, String says) {}
    for (Case c : new Case[] {
        new Case("jdbc:postgresql://h/db", "must start with postgresql://"),
        new Case("postgresql://h:5432", "database: the URI must name a database"),
        new Case("postgresql:///db", "host: at least one host"),
        new Case("postgresql://h/", "database must be 1 to 63 characters"),
        new Case("postgresql://h:0/db", "port must be a number from 1 to 65535; was '0'"),
        new Case("postgresql://h:x/db", "port must be a number from 1 to 65535; was 'x'"),
        new Case("postgresql://h,,i/db", "host must be a host name"),
        new Case("postgresql://bad host/db", "host must be a host name"),
        new Case("postgresql://u:secret@h/db", "credentials must not be in the URI"),
        new Case("postgresql://h/db?password=secret", "password must not be in the URI"),
        new Case("postgresql://h/db?schema=Locks", "schema must be a lower-case SQL identifier"),
        new Case("postgresql://h/db?schema=a;drop", "schema must be a lower-case SQL identifier"),
        new Case("postgresql://h/db?schema=" + "s".repeat(57), "at most 56 characters"),
        new Case("postgresql://h/db?sslmode=always", "sslmode must be one of disable"),
        new Case("postgresql://h/db?create-schema=yes", "create-schema must be true or false"),
        new Case("postgresql://h/db?connections=0", "connections must be a whole number from 1 to 64"),
        new Case("postgresql://h/db?connections=65", "was '65'"),
        new Case("postgresql://h/db?connections=two", "connections must be a whole number"),
        new Case("postgresql://h/db?timeout=1s", "unknown parameter 'timeout'; allowed: connections,"),
        new Case("postgresql://h/db?schema=a&schema=b", "parameter schema is given twice"),
        new Case("postgresql://h/db?user=", "user must not be empty"),
        new Case("postgresql://h/db?schema=%zz", "schema: "),
        new Case("postgresql://h/db?password-file=/run%00/pg", "password-file must be a file path without control"),
        new Case("postgresql://h/db?sslrootcert=/a%0a", "sslrootcert must be a file path without control")}) {
      assertThatThrownBy(() -> PostgresUri.parse(c.uri()))
          .as(c.uri())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(c.says());
    }
  }

  @Test
  void errorsNeverShowAPasswordGivenInTheUri() {
    assertThatThrownBy(() -> PostgresUri.parse("postgresql://u:hunter2@h/db"))
        .hasMessageNotContaining("hunter2");
    assertThatThrownBy(() -> PostgresUri.parse("postgresql://h/db?password=hunter2"))
        .hasMessageNotContaining("hunter2");
  }

  @Test
  void aMissingOrEmptyPasswordFileIsRefusedAtOpen(@TempDir Path dir) throws Exception {
    Path missing = dir.resolve("missing");
    assertThatThrownBy(() -> LeaseBackend.open("postgresql://127.0.0.1:1/db?password-file=" + missing))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("password-file '" + missing + "' cannot be read");
    Path empty = FileModes.ownerOnly(Files.writeString(dir.resolve("empty"), "\n"));
    assertThatThrownBy(() -> LeaseBackend.open("postgresql://127.0.0.1:1/db?password-file=" + empty))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("is empty");
    Path file = FileModes.ownerOnly(Files.writeString(dir.resolve("pw"), "s3cret\r\n"));
    assertThat(PostgresBackend.readPassword(file)).containsExactly('s', '3', 'c', 'r', 'e', 't');
    assertThatThrownBy(() -> PostgresBackend.builder("postgresql://127.0.0.1:1/db?password-file=" + file)
            .password("x".toCharArray()).build())
        .hasMessageContaining("either as password-file or as password(...)");
  }


  @Test
  void theSchemeIsFoundThroughServiceLoaderAndATooShortTtlIsRefused() {
    try (LeaseBackend backend = LeaseBackend.open("postgresql://127.0.0.1:1/db")) {
      assertThat(backend).isInstanceOf(PostgresBackend.class);
      assertThat(backend.uri()).isEqualTo("postgresql://127.0.0.1:1/db?schema=leasehold");
      assertThatThrownBy(() -> backend.newLease(LeaseSettings.builder("n", "o")
              .ttl(Duration.ofMillis(50)).heartbeatInterval(Duration.ofMillis(10)).build()))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("ttl must be at least 100 ms on PostgreSQL; was 50 ms");
    }
  }
}
