package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/** {@code leasehold run} through the command line: options, defaults, errors. */
@Timeout(value = 1, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
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
    int status = run("run", "--backend", "leasehold://127.0.0.1:7000", "--lease", "jobs", "--", "true");

    assertThat(status).isEqualTo(2);
    assertThat(err.toString())
        .contains("cannot use backend 'leasehold://127.0.0.1:7000'")
        .contains("no Leasehold backend for scheme 'leasehold'")
        .contains("available: memory");
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
