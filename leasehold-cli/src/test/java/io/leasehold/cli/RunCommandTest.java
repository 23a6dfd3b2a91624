package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.server.LocalCluster;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/** {@code leasehold run} through the command line: options, defaults, errors. */
@Timeout(value = 1, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class RunCommandTest {

  private final StringWriter err = new StringWriter();
  private final StringWriter out = new StringWriter();

  private int run(String... args) {
    CommandLine cmd = Main.commandLine();
    cmd.setErr(new PrintWriter(err, true));
    cmd.setOut(new PrintWriter(out, true));
    return cmd.execute(args);
  }

  @Test
  void runsTheCommandAndExitsWithItsStatus() {
    assertThat(run("run", "--backend", "memory:", "--lease", "jobs", "--", "sh", "-c", "exit 4"))
        .isEqualTo(4);
  }

  @Test
  void aBackendThatIsNotAvailableIsNamedWithTheSchemesThatAre() {
    int status = run("run", "--backend", "consul://127.0.0.1:8500", "--lease", "jobs", "--", "true");

    assertThat(status).isEqualTo(2);
    assertThat(err.toString())
        .contains("--backend is not a usable backend URI ('consul://127.0.0.1:8500')")
        .contains("no Leasehold backend for scheme 'consul'")
        .contains("available: etcd, etcds, kubernetes, leasehold, leaseholds, memory, zookeeper");
  }

  @Test
  void onTheCoreASecondRunIsRefusedNamingTheHolderThenRunsOnceItIsFree() throws Exception {
    try (LocalCluster cluster =
            LocalCluster.start(3, 0, Files.createTempDirectory(Path.of("target"), "run-"), c -> c);
        LeaseBackend other = LeaseBackend.open(cluster.uri());
        Lease held = other.newLease(LeaseSettings.builder("nightly", "holder-x").build())) {
      assertThat(held.acquire().get(20, TimeUnit.SECONDS)).isTrue();

      assertThat(run("run", "--backend", cluster.uri(), "--lease", "nightly", "--", "true"))
          .as("exit status while another process holds the lease")
          .isEqualTo(75);
      assertThat(err.toString()).contains("holder-x");

      held.release().get(20, TimeUnit.SECONDS);
      assertThat(
              run("run", "--backend", cluster.uri(), "--lease", "nightly", "--",
                  "sh", "-c", "test \"$LEASEHOLD_LEASE\" = nightly && test -n \"$LEASEHOLD_FENCING_TOKEN\""))
          .as("exit status of a command that checks its environment")
          .isZero();
    }
  }

  @Test
  void anUnreachableStoreExits69WithAHint() throws Exception {
    int port;
    try (java.net.ServerSocket free = new java.net.ServerSocket(0)) {
      port = free.getLocalPort(); // closed again: nothing listens there
    }
    assertThat(run("run", "--backend", "leasehold://127.0.0.1:" + port, "--lease", "jobs", "--", "true"))
        .isEqualTo(69);
    assertThat(err.toString()).contains("no node of [127.0.0.1:" + port + "] answered").contains("Is the cluster running, and are these its nodes' client ports?");
  }

  /**
   * Waiting on a store that never answers ends 69 (nobody was seen
   * holding the lease), not 75, and says it could not reach the store once, not every attempt.
   */
  @Test
  void waitingOnAnUnreachableStoreEnds69AndSaysItOnce() throws Exception {
    String uri = "leasehold://127.0.0.1:" + RunningCli.freePortPair();

    int status = run("run", "--backend", uri, "--ttl", "5s", "--lease", "jobs", "--wait", "--timeout", "8s", "--", "true");

    assertThat(status).as(err.toString()).isEqualTo(69);
    assertThat(err.toString().split("could not reach the store", -1)).as(err.toString()).hasSize(2);
    assertThat(err.toString()).contains("gave up waiting for lease 'jobs' after 8s: the store did not answer");
  }

  @Test
  void timeoutWithoutWaitIsBadUsage() {
    assertThat(run("run", "--backend", "memory:", "--lease", "jobs", "--timeout", "1s", "--", "true"))
        .isEqualTo(2);
    assertThat(err.toString()).contains("--timeout needs --wait");
  }

  @Test
  void aBadLeaseNameIsBadUsageNamingTheSetting() {
    assertThat(run("run", "--backend", "memory:", "--lease", " x", "--", "true")).isEqualTo(2);
    assertThat(err.toString()).as(err.toString()).contains("name");
  }

  @Test
  void theDefaultOwnerIsUserAtHostColonPid() {
    assertThat(RunCommand.defaultOwner())
        .endsWith(":" + ProcessHandle.current().pid())
        .contains("@");
  }

  @Test
  void theHelpDocumentsTheExitStatusesAndTheDefaultBackend() {
    assertThat(run("run", "--help")).isZero();
    assertThat(out.toString())
        .contains("LEASEHOLD_FENCING_TOKEN")
        .contains("75")
        .contains("70")
        .contains("LEASEHOLD_BACKEND");
  }
}
