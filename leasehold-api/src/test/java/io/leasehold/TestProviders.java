package io.leasehold;

/** Providers for {@link LeaseBackendTest}; registered in META-INF/services of the test class path. */
final class TestProviders {

  private TestProviders() {}

  /** Opens a backend that only remembers its URI. */
  public static final class Echo implements LeaseBackendProvider {
    @Override
    public String scheme() {
      return "echo";
    }

    @Override
    public LeaseBackend open(String uri) {
      return new LeaseBackend() {
        @Override
        public Lease newLease(LeaseSettings settings) {
          throw new UnsupportedOperationException("the echo backend makes no leases");
        }

        @Override
        public String uri() {
          return uri;
        }

        @Override
        public void close() {}
      };
    }
  }

  /** Two providers claim "twin", which the lookup must refuse. */
  public static final class TwinA implements LeaseBackendProvider {
    @Override
    public String scheme() {
      return "twin";
    }

    @Override
    public LeaseBackend open(String uri) {
      throw new AssertionError("must not be chosen");
    }
  }

  /** The second claimant of "twin". */
  public static final class TwinB implements LeaseBackendProvider {
    @Override
    public String scheme() {
      return "twin";
    }

    @Override
    public LeaseBackend open(String uri) {
      throw new AssertionError("must not be chosen");
    }
  }
}
