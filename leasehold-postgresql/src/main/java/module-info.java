/**
 * The PostgreSQL backend ({@code postgresql://host:5432/database?schema=NAME}), on the PostgreSQL
 * JDBC driver: one session row per backend and TTL renewed once per heartbeat, a lease row per
 * held name, expiry judged by the database's clock, and a per-name counter kept apart from the
 * lease rows as the fencing token.
 */
module io.leasehold.postgresql {
  requires transitive io.leasehold.spi;
  requires java.sql;
  requires org.postgresql.jdbc;
  requires org.slf4j;

  exports io.leasehold.postgresql;

  // The shipped schema script, read by the backend and by migration tools.
  opens io.leasehold.postgresql;

  provides io.leasehold.LeaseBackendProvider with
      io.leasehold.postgresql.PostgresBackendProvider;
}
