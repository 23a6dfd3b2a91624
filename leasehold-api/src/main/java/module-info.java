/**
 * The Leasehold lease contract. Applications depend on this module and on the one backend module
 * they run; backends are found through {@link io.leasehold.LeaseBackendProvider}.
 */
module io.leasehold {
  exports io.leasehold;

  uses io.leasehold.LeaseBackendProvider;
}
