/**
 * The deterministic state every replica applies the log to: {@link
 * io.leasehold.server.replicated.CoreState} (sessions, keys, tenures, the dedup of retried calls),
 * {@link io.leasehold.server.replicated.AclTable} (the access-control list) and {@link
 * io.leasehold.server.replicated.Formats} (snapshot and log format numbers). Nothing here reads a
 * clock, a thread or the network: the same entries give the same state on every node. Internal:
 * not an API.
 */
package io.leasehold.server.replicated;
