/**
 * What applications build on a {@link io.leasehold.Lease}: {@link
 * io.leasehold.recipes.LeaderElection} (a singleton that runs leader-only work while it holds the
 * lease), {@link io.leasehold.recipes.GatedExecutor} (runs irreversible steps only while the lease
 * is held, and rejects what is pending when it is lost) and {@link
 * io.leasehold.recipes.FencingGuard} (for the protected resource: rejects stale fencing tokens)
 * and {@link io.leasehold.recipes.Membership} (a group registry: join with data, list, be told of
 * joins and leaves).
 * They use the API only, so they work with every backend.
 */
module io.leasehold.recipes {
  requires transitive io.leasehold;
  requires org.slf4j;

  exports io.leasehold.recipes;
}
