package io.leasehold.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The histories a run leaves behind, parsed. Every instant is {@link System#nanoTime()} of the
 * process that wrote it: {@code CLOCK_MONOTONIC} on Linux, one clock for every process of the
 * machine, so instants of different processes compare (the clock agent never skews the
 * harness's own classes, which write these lines).
 *
 * <p>Client lines (one file per client process, see {@link ClientMain}):
 * <pre>
 * START client lease token tCall tAcquired      acquire() called at tCall, returned true at tAcquired
 * ALIVE client lease token t safeUntil          checkAlive() said true after the clock read t; written
 *                                              (and flushed) before the client acts on it; safeUntil:
 *                                              the local safe deadline it knew then (now + remaining())
 * LOST  client lease token t kind               its onLost handler ran at t (EXPIRED, REVOKED, TAKEN_OVER)
 * END   client lease token lastAlive reason      lastAlive: clock read just before the last checkAlive()
 *                                              that said true (-1: never)
 * WRITE client lease token seq tAttempt tDone ACCEPTED revision | REJECTED storedToken | UNKNOWN detail
 * KV    client seq key tStart tDone ACKED revision | UNKNOWN detail
 * KILLED client t                               written by the harness after kill -9 of the client:
 *                                              its open tenures end at their last ALIVE
 * </pre>
 * Nemesis lines: {@code FAULT id type target tStart tEnd [key=value...]}.
 */
final class History {

  private History() {}

  /**
   * One tenure as its holder saw it.
   *
   * @param client the holder
   * @param lease the lease's name
   * @param token its fencing token
   * @param call when acquire() was called
   * @param start when acquire() returned true (the store granted it somewhere in [call, start])
   * @param lastAlive the last instant witnessed by a true checkAlive(); below start when none was
   * @param reason why it ended: released, stopped, killed, or the loss
   * @param safeUntil the latest local safe deadline the holder knew (from its ALIVE lines), on the
   *     shared clock; -1 when unknown
   */
  record Tenure(String client, String lease, long token, long call, long start, long lastAlive, String reason,
      long safeUntil) {
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
   * One fenced write to a lease's register.
   *
   * @param client the writer
   * @param lease the lease whose register it wrote
   * @param token the token it wrote with
   * @param seq the writer's sequence number
   * @param attempt the instant the write was decided (the clock read before checkAlive() said true)
   * @param done when the reply came
   * @param outcome what the register said
   * @param value the new revision (accepted) or the register's token (rejected)
   */
  record Write(String client, String lease, long token, long seq, long attempt, long done, Outcome outcome, long value) {}

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
   * @param detail what else the nemesis noted ({@code rate=0.99}, {@code lease=...})
   */
  record Fault(int id, FaultType type, String target, long start, long end, Map<String, String> detail) {
    Fault {
      detail = Map.copyOf(detail);
    }
  }

  /**
   * A loss as the holder's {@code onLost} handler saw it.
   *
   * @param client the holder
   * @param lease the lease
   * @param token the tenure's token
   * @param at when the handler ran
   * @param kind EXPIRED, REVOKED, TAKEN_OVER...
   */
  record Loss(String client, String lease, long token, long at, String kind) {}

  /** Everything the clients and the nemesis recorded. */
  record Recorded(List<Tenure> tenures, List<Write> writes, List<Kv> kvs, List<Fault> faults, List<Loss> losses,
      List<String> errors) {}

  /**
   * Parses client history files and a nemesis file.
   *
   * @param clientFiles one per client process
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

  /** A tenure between its START and its END. */
  private static final class Open {
    final String[] start;
    long lastAlive = -1;
    long safeUntil = -1;

    Open(String[] start) {
      this.start = start;
    }

    Tenure end(long lastAlive, String reason) {
      return new Tenure(start[1], start[2], Long.parseLong(start[3]), Long.parseLong(start[4]), Long.parseLong(start[5]),
          lastAlive, reason, safeUntil);
    }
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
    List<Loss> losses = new ArrayList<>();
    List<String> errors = new ArrayList<>();
    Map<String, Open> open = new LinkedHashMap<>(); // by "client lease"
    for (String line : lines) {
      if (line.isBlank()) {
        continue;
      }
      String[] f = line.trim().split(" ");
      try {
        switch (f[0]) {
          case "START" -> {
            Long.parseLong(f[3]);
            Long.parseLong(f[4]);
            Long.parseLong(f[5]);
            Open previous = open.put(f[1] + " " + f[2], new Open(f));
            if (previous != null) {
              errors.add("client " + f[1] + ": START of " + f[2] + " token " + f[3] + " while token " + previous.start[3]
                  + " had no END");
            }
          }
          case "ALIVE" -> {
            Open o = open.get(f[1] + " " + f[2]);
            if (o == null || !o.start[3].equals(f[3])) {
              errors.add("ALIVE outside its tenure: " + line);
            } else {
              o.lastAlive = Math.max(o.lastAlive, Long.parseLong(f[4]));
              if (f.length > 5) {
                o.safeUntil = Math.max(o.safeUntil, Long.parseLong(f[5]));
              }
            }
          }
          case "LOST" -> losses.add(new Loss(f[1], f[2], Long.parseLong(f[3]), Long.parseLong(f[4]), f[5]));
          case "END" -> {
            Open o = open.remove(f[1] + " " + f[2]);
            if (o == null || !o.start[3].equals(f[3])) {
              errors.add("END without its START: " + line);
            } else {
              tenures.add(o.end(Long.parseLong(f[4]), f.length > 5 ? f[5] : ""));
            }
          }
          case "KILLED" -> {
            // kill -9: no END comes. The tenure ends at the last instant its holder saw checkAlive()
            // true and acted on it, which it flushed as ALIVE before acting.
            long killedAt = Long.parseLong(f[2]);
            for (var it = open.entrySet().iterator(); it.hasNext(); ) {
              Open o = it.next().getValue();
              if (o.start[1].equals(f[1])) {
                it.remove();
                if (o.lastAlive > killedAt) {
                  errors.add("client " + f[1] + ": ALIVE after its kill in " + o.start[2] + " token " + o.start[3]);
                }
                tenures.add(o.end(o.lastAlive, "killed"));
              }
            }
          }
          case "WRITE" -> writes.add(new Write(f[1], f[2], Long.parseLong(f[3]), Long.parseLong(f[4]),
              Long.parseLong(f[5]), Long.parseLong(f[6]), Outcome.valueOf(f[7]),
              f[7].equals("UNKNOWN") ? 0 : Long.parseLong(f[8])));
          case "KV" -> kvs.add(new Kv(f[1], f[3], f[6].equals("ACKED"), f[6].equals("ACKED") ? Long.parseLong(f[7]) : 0));
          case "FAULT" -> {
            Map<String, String> detail = new LinkedHashMap<>();
            for (int i = 6; i < f.length; i++) {
              int eq = f[i].indexOf('=');
              detail.put(eq < 0 ? f[i] : f[i].substring(0, eq), eq < 0 ? "" : f[i].substring(eq + 1));
            }
            faults.add(new Fault(Integer.parseInt(f[1]), FaultType.valueOf(f[2]), f[3],
                Long.parseLong(f[4]), Long.parseLong(f[5]), detail));
          }
          default -> { } // other lines (EMPTY, notes) carry nothing the checker needs
        }
      } catch (RuntimeException e) {
        errors.add("unreadable history line '" + line + "': " + e);
      }
    }
    for (Open o : open.values()) {
      errors.add("client " + o.start[1] + ": tenure of " + o.start[2] + " with token " + o.start[3]
          + " has no END (the client did not stop cleanly)");
    }
    return new Recorded(tenures, writes, kvs, faults, losses, errors);
  }

  private static List<String> readLines(Path p) {
    try {
      return Files.readAllLines(p, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read history " + p, e);
    }
  }
}
