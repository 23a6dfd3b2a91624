package io.leasehold.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The histories a run leaves behind, parsed. Every instant is {@link System#nanoTime()} of the
 * process that wrote it: {@code CLOCK_MONOTONIC} on Linux, one clock for every process of the
 * machine, so instants of different processes compare.
 *
 * <p>Client lines (one file per client, see {@link ClientMain}):
 * <pre>
 * START client token tCall tAcquired           acquire() called at tCall, returned true at tAcquired
 * END   client token lastAlive reason           lastAlive: clock read just before the last checkAlive()
 *                                              that said true (-1: never)
 * WRITE client token seq tAttempt tDone ACCEPTED revision | REJECTED storedToken | UNKNOWN detail
 * KV    client seq key tStart tDone ACKED revision | UNKNOWN detail
 * </pre>
 * Nemesis lines: {@code FAULT id type target tStart tEnd}.
 */
final class History {

  private History() {}

  /**
   * One tenure as its holder saw it.
   *
   * @param client the holder
   * @param token its fencing token
   * @param call when acquire() was called
   * @param start when acquire() returned true (the store granted it somewhere in [call, start])
   * @param lastAlive the last instant witnessed by a true checkAlive(); below start when none was
   * @param reason why it ended: released, stopped, or the loss
   */
  record Tenure(String client, long token, long call, long start, long lastAlive, String reason) {
    /** {@return whether a true checkAlive() witnessed this tenure at all} */
    boolean witnessed() {
      return lastAlive >= start;
    }
  }

  /** Outcome of a fenced register write. */
  enum Outcome {
    ACCEPTED,
    REJECTED,
    UNKNOWN
  }

  /**
   * One fenced write to the register.
   *
   * @param client the writer
   * @param token the token it wrote with
   * @param seq the writer's sequence number
   * @param attempt the instant the write was decided (the clock read before checkAlive() said true)
   * @param done when the reply came
   * @param outcome what the register said
   * @param value the new revision (accepted) or the register's token (rejected)
   */
  record Write(String client, long token, long seq, long attempt, long done, Outcome outcome, long value) {}

  /**
   * One plain key-value write.
   *
   * @param client the writer
   * @param key the key
   * @param acked whether the core acknowledged it
   * @param revision its revision when acknowledged
   */
  record Kv(String client, String key, boolean acked, long revision) {}

  /**
   * One injected fault.
   *
   * @param id its number in the run
   * @param type what was done
   * @param target to whom
   * @param start when it began
   * @param end when it was healed
   */
  record Fault(int id, FaultType type, String target, long start, long end) {}

  /** Everything the clients and the nemesis recorded. */
  record Recorded(List<Tenure> tenures, List<Write> writes, List<Kv> kvs, List<Fault> faults, List<String> errors) {}

  /**
   * Parses client history files and a nemesis file.
   *
   * @param clientFiles one per client
   * @param nemesisFile the nemesis history (may be absent)
   * @return what they recorded; lines that cannot be parsed and tenures without an end go to errors
   */
  static Recorded read(List<Path> clientFiles, Path nemesisFile) {
    List<String> lines = new ArrayList<>();
    for (Path p : clientFiles) {
      lines.addAll(readLines(p));
    }
    if (nemesisFile != null && Files.exists(nemesisFile)) {
      lines.addAll(readLines(nemesisFile));
    }
    return parse(lines);
  }

  /**
   * Parses history lines (any order of files; lines of one client in the order written).
   *
   * @param lines the lines
   * @return what they recorded
   */
  static Recorded parse(List<String> lines) {
    List<Tenure> tenures = new ArrayList<>();
    List<Write> writes = new ArrayList<>();
    List<Kv> kvs = new ArrayList<>();
    List<Fault> faults = new ArrayList<>();
    List<String> errors = new ArrayList<>();
    Map<String, String[]> open = new HashMap<>();
    for (String line : lines) {
      if (line.isBlank()) {
        continue;
      }
      String[] f = line.trim().split(" ");
      try {
        switch (f[0]) {
          case "START" -> {
            String[] previous = open.put(f[1], f);
            if (previous != null) {
              errors.add("client " + f[1] + ": START of token " + f[2] + " while token " + previous[2] + " had no END");
            }
          }
          case "END" -> {
            String[] s = open.remove(f[1]);
            if (s == null || !s[2].equals(f[2])) {
              errors.add("END without its START: " + line);
            } else {
              tenures.add(new Tenure(f[1], Long.parseLong(f[2]), Long.parseLong(s[3]), Long.parseLong(s[4]),
                  Long.parseLong(f[3]), f.length > 4 ? f[4] : ""));
            }
          }
          case "WRITE" -> writes.add(new Write(f[1], Long.parseLong(f[2]), Long.parseLong(f[3]),
              Long.parseLong(f[4]), Long.parseLong(f[5]), Outcome.valueOf(f[6]),
              f[6].equals("UNKNOWN") ? 0 : Long.parseLong(f[7])));
          case "KV" -> kvs.add(new Kv(f[1], f[3], f[6].equals("ACKED"), f[6].equals("ACKED") ? Long.parseLong(f[7]) : 0));
          case "FAULT" -> faults.add(new Fault(Integer.parseInt(f[1]), FaultType.valueOf(f[2]), f[3],
              Long.parseLong(f[4]), Long.parseLong(f[5])));
          default -> { } // other lines (EMPTY, notes) carry nothing the checker needs
        }
      } catch (RuntimeException e) {
        errors.add("unreadable history line '" + line + "': " + e);
      }
    }
    for (String[] s : open.values()) {
      errors.add("client " + s[1] + ": tenure with token " + s[2] + " has no END (the client did not stop cleanly)");
    }
    return new Recorded(tenures, writes, kvs, faults, errors);
  }

  private static List<String> readLines(Path p) {
    try {
      return Files.readAllLines(p, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read history " + p, e);
    }
  }
}
