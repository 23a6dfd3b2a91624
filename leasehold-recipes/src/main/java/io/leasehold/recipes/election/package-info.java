/**
 * Leader election: {@link io.leasehold.recipes.election.LeaderElection} contends for a lease and,
 * while it holds it, runs leader-only work ({@link io.leasehold.recipes.election.LeaderWork}, given
 * a {@link io.leasehold.recipes.election.LeaderContext}); a {@link
 * io.leasehold.recipes.election.LeadershipListener} is told when terms start and end. See
 * docs/recipes.md.
 */
package io.leasehold.recipes.election;
