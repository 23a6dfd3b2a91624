/**
 * Group membership: {@link io.leasehold.recipes.membership.Membership} lets a process join a group
 * with its data (as a {@link io.leasehold.recipes.membership.Member}), and others list the members
 * ({@link io.leasehold.recipes.membership.GroupMember}) and be told of joins and leaves ({@link
 * io.leasehold.recipes.membership.GroupView}, {@link io.leasehold.recipes.membership.GroupListener}).
 * See docs/recipes.md.
 */
package io.leasehold.recipes.membership;
