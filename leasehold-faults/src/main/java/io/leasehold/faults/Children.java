package io.leasehold.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Child processes of the harness: started with their output in a file, signalled, and killed
 * when the harness ends however it ends (a shutdown hook kills whatever is left; a client's stdin
 * closing with us also stops it).
 */
final class Children {

  private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(p -> {
      signal(p, "CONT"); // a frozen process cannot even die of SIGKILL's cleanup otherwise
      p.destroyForcibly();
    }), "faults-children-reaper"));
  }

  private Children() {}

  static String java() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  /** Starts {@code command}; with {@code log} set, its stdout and stderr are appended there. */
  static Process start(List<String> command, Path log) {
    ProcessBuilder b = new ProcessBuilder(command);
    if (log != null) {
      b.redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
    }
    try {
      Process p = b.start();
      LIVE.add(p);
      return p;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start " + command.get(command.size() - 1), e);
    }
  }

  /** Starts {@code command} with only its stderr in {@code errLog}; stdin and stdout are pipes. */
  static Process startPiped(List<String> command, Path errLog) {
    ProcessBuilder b = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.appendTo(errLog.toFile()));
    try {
      Process p = b.start();
      LIVE.add(p);
      return p;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start " + command, e);
    }
  }

  /** SIGKILL, and wait until it is gone. */
  static void kill(Process p) {
    if (p == null) {
      return;
    }
    p.destroyForcibly();
    try {
      p.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    LIVE.remove(p);
  }

  /** Sends {@code SIGSTOP}, {@code SIGCONT}... by name; ignores a process that is gone. */
  static void signal(Process p, String signal) {
    if (p == null || !p.isAlive()) {
      return;
    }
    try {
      Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid())).start();
      kill.waitFor(10, TimeUnit.SECONDS);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot run kill -" + signal, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
