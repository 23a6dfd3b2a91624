package io.leasehold.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.faults.Checker.FinalState;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code leasehold faults check DIR} checks the histories a run left in its directory: the same
 * verdict as the run's own check, with the final read the harness kept, and without it no
 * acknowledged write is taken as lost.
 */
@Timeout(30)
class CheckCommandTest {

  private static final long MS = 1_000_000L;

  @TempDir Path dir;

  private final StringWriter out = new StringWriter();
  private final StringWriter err = new StringWriter();

  private int check(String... args) {
    CommandLine cl = FaultsMain.commandLine();
    cl.setOut(new PrintWriter(out));
    cl.setErr(new PrintWriter(err));
    String[] all = new String[args.length + 1];
    all[0] = "check";
    System.arraycopy(args, 0, all, 1, args.length);
    return cl.execute(all);
  }

  private void histories(List<String> lines) throws Exception {
    // Split by client, as a run writes them: each client's lines in its own file.
    List<String> clients = lines.stream().filter(l -> !l.startsWith("FAULT ")).toList();
    Files.write(dir.resolve("client-c1.log"), clients.stream().filter(l -> l.contains(" c1 ")).toList());
    Files.write(dir.resolve("client-c2.log"), clients.stream().filter(l -> l.contains(" c2 ")).toList());
    Files.write(dir.resolve("nemesis.log"), lines.stream().filter(l -> l.startsWith("FAULT ")).toList());
  }

  @Test
  void aCleanRunWithItsFinalReadPasses() throws Exception {
    histories(CheckerTest.clean());
    CheckerTest.END.write(dir.resolve(Harness.FINAL_READ));

    assertThat(check(dir.toString())).as(err.toString()).isZero();
    assertThat(out.toString())
        .contains("2 client histories")
        .contains("tenures 3, handovers 2")
        .contains("OK: no violations")
        .doesNotContain("not checked");
  }

  @Test
  void anOverlapInTheHistoriesFailsTheCheck() throws Exception {
    List<String> lines = CheckerTest.clean();
    lines.set(6, "END c2 L 20 " + 450 * MS + " lost:EXPIRED"); // c2 still held after c1 started at 400 ms
    histories(lines);
    CheckerTest.END.write(dir.resolve(Harness.FINAL_READ));

    assertThat(check(dir.toString())).isEqualTo(1);
    assertThat(out.toString()).containsPattern("overlapping tenures +1\n").contains("FAILED: 1 violations");
  }

  @Test
  void aKeyMissingFromTheKeptFinalReadIsALostWrite() throws Exception {
    histories(CheckerTest.clean());
    new FinalState(Set.of("/faults/kv/c1/1"), CheckerTest.END.registers()).write(dir.resolve(Harness.FINAL_READ));

    assertThat(check(dir.toString())).isEqualTo(1);
    assertThat(out.toString()).contains("acknowledged write lost: /faults/kv/c2/1");
  }

  @Test
  void withoutAFinalReadAcknowledgedWritesAreNotCheckedAndSaySo() throws Exception {
    histories(CheckerTest.clean());

    assertThat(check(dir.toString())).as(err.toString()).isZero();
    assertThat(out.toString()).contains("acknowledged writes: not checked").contains("OK: no violations");
  }

  @Test
  void theFinalReadSurvivesItsFile() throws Exception {
    FinalState state = new FinalState(Set.of("/faults/kv/c1/1", "/faults/kv/c2/7"),
        Map.of("L", new Checker.Register(31, 30), "M", new Checker.Register(0, -1)));
    Path file = dir.resolve(Harness.FINAL_READ);
    state.write(file);
    assertThat(FinalState.read(file)).isEqualTo(state);

    Files.writeString(file, "register L thirty 30\n");
    Files.write(dir.resolve("client-c1.log"), List.of());
    assertThat(check(dir.toString())).as("a malformed final read is an error, not a pass").isEqualTo(2);
    assertThat(err.toString()).contains(Harness.FINAL_READ + " line 1: the revision and the token must be numbers")
        .doesNotContain("Exception");

    Files.writeString(file, "key /faults/kv/c1/1\nkeys /faults/kv/c2/7\n");
    assertThat(check(dir.toString())).isEqualTo(2);
    assertThat(err.toString()).contains(Harness.FINAL_READ + " line 2: neither 'key KEY' nor 'register LEASE REVISION TOKEN'");
  }

  @Test
  void aDirectoryWithoutHistoriesIsRefusedWithStatus2() throws Exception {
    assertThat(check(dir.toString())).isEqualTo(2);
    assertThat(err.toString()).contains("holds no client histories (client-*.log)").doesNotContain("Usage:");

    assertThat(check(dir.resolve("absent").toString())).isEqualTo(2);
    assertThat(err.toString()).contains("is not a directory");

    Files.write(dir.resolve("client-c1.log"), List.of());
    assertThat(check("--max-clock-drift=0.9", dir.toString())).isEqualTo(2);
    assertThat(err.toString()).contains("--max-clock-drift must be between 0 and 0.5; was 0.9");
  }
}
