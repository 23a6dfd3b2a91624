package io.leasehold.cli;

import java.io.PrintWriter;
import java.io.StringWriter;

/** Runs the {@code leasehold} command in this JVM and captures what it prints. */
record Cli(int exitCode, String out, String err) {

  static Cli run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exitCode =
        Main.commandLine()
            .setOut(new PrintWriter(out, true))
            .setErr(new PrintWriter(err, true))
            .execute(args);
    return new Cli(exitCode, out.toString(), err.toString());
  }
}
