package io.leasehold.server.replicated;

/**
 * A tenure of a named lease beginning or ending, as this node applied it, for the status page's
 * tail of events (read from the node's watch history). Not the API's {@code io.leasehold.LeaseEvent},
 * which is what an observer of a lease is told; this is the node's own record for operators.
 *
 * @param revision the revision of the change
 * @param type ACQUIRED (a tenure began) or ENDED (released, expired, revoked, replaced)
 * @param name the lease's name
 * @param holder the tenure's holder
 * @param token the tenure's fencing token
 * @param cause for an ENDED tenure: why ("released", "session expired", ...); else empty
 */
public record TenureChange(long revision, String type, String name, String holder, long token, String cause) {}
