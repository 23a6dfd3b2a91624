package io.leasehold.postgresql;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;

/**
 * Fuzz test of the {@code postgresql://} URI parser (docs/testing.md, "Fuzzing"): any string is
 * either a usable URI (hosts with a port in range, a schema that needs no quoting in SQL, at most
 * 64 connections, a canonical form that parses to the same hosts, database, schema and user) or
 * refused with the parser's own {@link IllegalArgumentException}, which names the URI's form;
 * nothing else. Input: the URI's bytes, as UTF-8.
 */
@Timeout(60)
@Tag("integration")
class PostgresUriFuzzTest {

  @FuzzTest
  void anyStringIsAPostgresUriOrRefusedWithTheExpectedForm(byte[] input) {
    String text = new String(input, StandardCharsets.UTF_8);
    PostgresUri uri;
    try {
      uri = PostgresUri.parse(text);
    } catch (IllegalArgumentException e) {
      assertThat(e.getMessage()).as("refusal of '%s'", text)
          .startsWith("PostgreSQL backend URI '")
          .contains("(form: postgresql://");
      return;
    }
    assertThat(uri.hosts()).as("hosts of '%s'", text).isNotEmpty();
    for (String host : uri.hosts()) {
      int port = Integer.parseInt(host.substring(host.lastIndexOf(':') + 1));
      assertThat(port).as("port of %s in '%s'", host, text).isBetween(1, 65535);
    }
    assertThat(uri.schema()).as("schema of '%s'", text).matches("[a-z_][a-z0-9_]{0,55}");
    assertThat(uri.database()).as("database of '%s'", text).isNotEmpty();
    assertThat(uri.connections()).as("connections of '%s'", text).isBetween(1, 64);
    PostgresUri again = PostgresUri.parse(uri.canonical());
    assertThat(again.hosts()).as("'%s' parsed again from its canonical form", text).isEqualTo(uri.hosts());
    assertThat(again.database()).isEqualTo(uri.database());
    assertThat(again.schema()).isEqualTo(uri.schema());
    assertThat(again.user()).isEqualTo(uri.user());
  }
}
