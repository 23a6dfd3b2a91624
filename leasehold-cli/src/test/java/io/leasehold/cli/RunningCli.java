package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A long-running {@code leasehold} command (dev, server) in a thread of this JVM, with what it has
 * printed so far. {@link #stop()} interrupts it, which the commands treat as Ctrl-C.
 */
final class RunningCli implements AutoCloseable {

  private final StringWriter out = new StringWriter();
  private final StringWriter err = new StringWriter();
  private final CompletableFuture<Integer> exitCode = new CompletableFuture<>();
  private final Thread thread;

  private RunningCli(String... args) {
    thread =
        new Thread(
            () -> {
              try {
                exitCode.complete(
                    Main.commandLine()
                        .setOut(new PrintWriter(out, true))
                        .setErr(new PrintWriter(err, true))
                        .execute(args));
              } catch (Throwable t) {
                exitCode.completeExceptionally(t);
              }
            },
            "leasehold-" + args[0]);
  }

  static RunningCli start(String... args) {
    RunningCli cli = new RunningCli(args);
    cli.thread.start();
    return cli;
  }

  String out() {
    return out.toString();
  }

  String err() {
    return err.toString();
  }

  /** Waits until stdout has a line matching {@code regex} (the whole line); returns it. */
  String awaitLine(String regex, Duration atMost) {
    Pattern line = Pattern.compile("(?m)^" + regex + "$");
    await()
        .atMost(atMost)
        .pollInterval(Duration.ofMillis(50))
        .failFast("the command ended", exitCode::isDone)
        .until(() -> line.matcher(out()).find());
    Matcher m = line.matcher(out());
    assertThat(m.find()).isTrue();
    return m.group();
  }

  /** Waits until stderr contains {@code text}. */
  void awaitErr(String text, Duration atMost) {
    await()
        .atMost(atMost)
        .pollInterval(Duration.ofMillis(50))
        .failFast("the command ended", exitCode::isDone)
        .until(() -> err().contains(text));
  }

  /** Interrupts the command (as Ctrl-C would stop it) and returns its exit code. */
  int stop() {
    thread.interrupt();
    try {
      return exitCode.get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("the command did not stop; out:\n" + out() + "\nerr:\n" + err(), e);
    }
  }

  /** Waits for the command to end by itself and returns its exit code. */
  int awaitExit(Duration atMost) {
    try {
      return exitCode.get(atMost.toMillis(), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      throw new AssertionError("the command did not end; out:\n" + out() + "\nerr:\n" + err(), e);
    }
  }

  @Override
  public void close() {
    if (!exitCode.isDone()) {
      stop();
    }
  }

  /** A free loopback port whose next port is free too (a node's client and Raft ports). */
  static int freePortPair() {
    return io.leasehold.server.LocalCluster.freePortPair();
  }
}
