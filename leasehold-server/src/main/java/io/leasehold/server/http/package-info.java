/**
 * An operator's HTTP endpoints for the core: Prometheus metrics, health and readiness, and a
 * self-contained status page. See {@link io.leasehold.server.http.StatusHttpServer}.
 */
package io.leasehold.server.http;
