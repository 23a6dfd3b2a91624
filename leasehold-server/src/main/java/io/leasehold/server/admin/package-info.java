/**
 * Changes to the cluster itself: adding, removing and replacing a node ({@link
 * io.leasehold.server.admin.MembershipChanges}, served by {@link
 * io.leasehold.server.admin.MembershipRpcs}) and moving leadership ({@link
 * io.leasehold.server.admin.LeadershipTransfer}). Internal: not an API.
 */
package io.leasehold.server.admin;
