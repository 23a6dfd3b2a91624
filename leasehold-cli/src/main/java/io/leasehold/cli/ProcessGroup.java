package io.leasehold.cli;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A command started in its own session and process group, so that it and everything it starts
 * can be signalled together: {@code setsid} (util-linux) makes the child a session leader, and its
 * process group id is then its own pid. Signals go to the whole group through {@code kill}, as
 * {@code kill -TERM -- -PGID}, which Java cannot send itself.
 */
final class ProcessGroup {

  private static final String SETSID = "setsid";
  private static final String KILL = "kill";

  private final Process process;

  private ProcessGroup(Process process) {
    this.process = process;
  }

  /**
   * Starts {@code command} in a new session with the standard streams of this process.
   *
   * @throws IOException if {@code setsid} cannot be started
   */
  static ProcessGroup start(List<String> command, Map<String, String> env) throws IOException {
    List<String> argv = new ArrayList<>();
    argv.add(SETSID);
    argv.addAll(command);
    ProcessBuilder pb = new ProcessBuilder(argv).inheritIO();
    pb.environment().putAll(env);
    try {
      return new ProcessGroup(pb.start());
    } catch (IOException e) {
      throw new IOException(
          "could not start the command through setsid, which puts it in its own process group so"
              + " that it can be stopped as a whole (install util-linux): " + e.getMessage(), e);
    }
  }

  /** {@return the pid of the command, which is also its process group id} */
  long pid() {
    return process.pid();
  }

  boolean isAlive() {
    return process.isAlive();
  }

  int waitFor() throws InterruptedException {
    return process.waitFor();
  }

  boolean waitFor(long nanos) throws InterruptedException {
    return process.waitFor(nanos, TimeUnit.NANOSECONDS);
  }

  /**
   * Sends {@code signal} (TERM, KILL) to every process of the group. Quietly does nothing when the
   * group is gone.
   */
  void signal(String signal) {
    ProcessBuilder pb =
        new ProcessBuilder(KILL, "-s", signal, "--", "-" + process.pid())
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .redirectError(ProcessBuilder.Redirect.DISCARD);
    try {
      pb.start().waitFor(5, TimeUnit.SECONDS);
    } catch (IOException e) {
      // No kill(1): signal the command itself at least.
      if ("KILL".equals(signal)) {
        process.destroyForcibly();
      } else {
        process.destroy();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
