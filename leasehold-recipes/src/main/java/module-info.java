/**
 * What applications build on a {@link io.leasehold.Lease}, one package per recipe: {@link
 * io.leasehold.recipes.election.LeaderElection} (a singleton that runs leader-only work while it
 * holds the lease), {@link io.leasehold.recipes.gated.GatedExecutor} (runs irreversible steps only
 * while the lease is held, and rejects what is pending when it is lost), {@link
 * io.leasehold.recipes.fencing.FencingGuard} (for the protected resource: rejects stale fencing
 * tokens) and {@link io.leasehold.recipes.membership.Membership} (a group registry: join with
 * data, list, be told of joins and leaves). {@code io.leasehold.recipes.internal} (the shared
 * scheduler thread) is not exported.
 * They use the API only, so they work with every backend.
 */
module io.leasehold.recipes {
  requires transitive io.leasehold;
  requires org.slf4j;

  exports io.leasehold.recipes.election;
  exports io.leasehold.recipes.fencing;
  exports io.leasehold.recipes.gated;
  exports io.leasehold.recipes.membership;
}
