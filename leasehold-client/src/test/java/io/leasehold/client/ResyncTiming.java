package io.leasehold.client;

import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.BatchOp;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.server.LocalCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * A measurement, never part of the tests (it runs only when asked for): how long reading every
 * lease key of a 3-node core takes, as a resync does, at N leases (owner names of 23 characters,
 * lease names of 12), one unpaged {@code Get} (what a resync did before) against the paged read
 * ({@link PrefixPages}, what it does now). Prints the median of 5 reads after 2 warm-up reads.
 *
 * <pre>
 * mvn -B -ntp -q -o -pl leasehold-client -am test -Dtest=ResyncTiming \
 *     -Dsurefire.failIfNoSpecifiedTests=false -Dleasehold.timing.leases=10000,100000
 * </pre>
 */
@EnabledIfSystemProperty(named = "leasehold.timing.leases", matches = "[0-9,]+")
class ResyncTiming {

  @Test
  void readEveryLeaseKey() throws Exception {
    int[] sizes = Arrays.stream(System.getProperty("leasehold.timing.leases").split(",")).mapToInt(Integer::parseInt).toArray();
    Path root = Files.createTempDirectory(Path.of("target"), "resync-timing-");
    try (LocalCluster cluster = LocalCluster.start(3, 0, root, c -> c.withElectionTimeout(Duration.ofMillis(300)));
        CoreClient client = new CoreClient(CoreFixture.endpoints(cluster.peers()), Duration.ofSeconds(30))) {
      CoreFixture.awaitServing(cluster);
      GrantRequest grant = GrantRequest.newBuilder().setCall(client.newCall()).setOwner("timing").setTtlMillis(3_600_000).build();
      long session = client.<GrantResponse>call((s, o) -> s.grant(grant, o)).get(30, TimeUnit.SECONDS).getSessionId();
      int filled = 0;
      for (int n : sizes) {
        for (int from = filled; from < n; from += 1000) {
          List<CompletableFuture<AcquireResponse>> acquires = new ArrayList<>();
          for (int i = from; i < Math.min(n, from + 1000); i++) {
            AcquireRequest a = AcquireRequest.newBuilder().setCall(client.newCall()).setName(String.format("lease-%06d", i))
                .setHolder("timing-owner#0000000000000001").setRequestId(1).setSessionId(session).build();
            acquires.add(client.batched(BatchOp.newBuilder().setAcquire(a).build(), AcquireResponse.parser()));
          }
          for (CompletableFuture<AcquireResponse> f : acquires) {
            f.get(60, TimeUnit.SECONDS);
          }
        }
        filled = n;
        GetRequest unpaged = GetRequest.newBuilder().setKey(LeaseWatch.LEASE_PREFIX).setPrefix(true).build();
        String before;
        try {
          long[] t = new long[7];
          long bytes = 0;
          for (int r = 0; r < t.length; r++) {
            long start = System.nanoTime();
            GetResponse all = client.<GetResponse>call((s, o) -> s.get(unpaged, o)).get(60, TimeUnit.SECONDS);
            t[r] = System.nanoTime() - start;
            bytes = all.getSerializedSize();
          }
          before = median(t) + " ms (one answer of " + bytes + " bytes)";
        } catch (java.util.concurrent.ExecutionException e) {
          before = "fails: " + e.getCause().getMessage();
        }
        long[] t = new long[7];
        int[] pages = new int[1];
        for (int r = 0; r < t.length; r++) {
          pages[0] = 0;
          long start = System.nanoTime();
          PrefixPages.read(client, LeaseWatch.LEASE_PREFIX, PrefixPages.PAGE_KEYS, p -> pages[0]++).get(120, TimeUnit.SECONDS);
          t[r] = System.nanoTime() - start;
        }
        System.out.printf("RESYNC-TIMING leases=%d unpaged: %s; paged: %s ms in %d pages%n", n, before, median(t), pages[0]);
      }
    }
  }

  /** The median of the last 5 of 7 readings (the first 2 warm up), in milliseconds. */
  private static String median(long[] nanos) {
    long[] last = Arrays.copyOfRange(nanos, 2, nanos.length);
    Arrays.sort(last);
    return String.format("%.1f", last[last.length / 2] / 1e6);
  }
}
