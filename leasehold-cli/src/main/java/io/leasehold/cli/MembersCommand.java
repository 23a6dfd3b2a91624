package io.leasehold.cli;

import io.leasehold.LeaseBackend;
import io.leasehold.LeaseEvent;
import io.leasehold.LeaseLost;
import io.leasehold.recipes.membership.GroupListener;
import io.leasehold.recipes.membership.GroupMember;
import io.leasehold.recipes.membership.GroupView;
import io.leasehold.recipes.membership.Member;
import io.leasehold.recipes.membership.Membership;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code leasehold members GROUP}: the members of a group (the membership recipe), or each change. */
@Command(
    name = "members",
    mixinStandardHelpOptions = true,
    header = "Lists the members of a group, or prints each join and leave with --watch.",
    description = {
      "Reads every slot of group GROUP (the leases GROUP.member.0 to GROUP.member.<N-1>, see"
          + " docs/recipes.md) and prints each member: its id, slot, fencing token, since when"
          + " (where the store records it) and the data it joined with.",
      "With --watch: prints each member already there as JOINED, then one line per JOINED or LEFT"
          + " (with why: RELEASED, EXPIRED, REVOKED, TAKEN_OVER, GAP) until interrupted.",
      "With --join ID: joins the group as ID with the --data given, prints the slot it took, and"
          + " stays a member until Ctrl-C (then leaves: releases the slot).",
      "Without --backend: $" + Backends.ENV + ", else what `leasehold dev` starts by default:%n  "
          + Backends.DEV_URI,
      "Exits 0 when the store answered (or when interrupted, or after --count lines with --watch),"
          + " 1 if it did not answer in time or the backend cannot read or observe leases, 2 for bad"
          + " options. With --join: 0 after Ctrl-C (it left), 1 if it could not join (the group is"
          + " full, no answer), 70 if it was cut off and lost its slot."
    })
final class MembersCommand implements Callable<Integer> {

  @Spec private CommandSpec spec;

  @Parameters(index = "0", paramLabel = "GROUP", description = "The group name.")
  private String group;

  @Option(names = "--backend", paramLabel = "URI", description = "The store's URI (default: see above).")
  private String backend;

  @Option(names = "--watch", description = "Print each join and leave, one line each, until interrupted.")
  private boolean watch;

  @Option(names = "--json", description = "Print JSON: one object (the list), or one object per line (--watch).")
  private boolean json;

  @Option(
      names = "--max-members",
      paramLabel = "N",
      defaultValue = "" + Membership.DEFAULT_MAX_MEMBERS,
      description = "The group's number of slots, as its members joined with; 1 to "
          + Membership.MAX_MAX_MEMBERS + " (default: ${DEFAULT-VALUE}).")
  private int maxMembers;

  @Option(
      names = "--count",
      paramLabel = "N",
      description = "With --watch: exit after N lines; 1 to 1000000. Default: run until interrupted.")
  private Integer count;

  @Option(
      names = "--join",
      paramLabel = "ID",
      description = "Join the group as member ID and stay until Ctrl-C.")
  private String joinAs;

  @Option(
      names = "--data",
      paramLabel = "KEY=VALUE",
      description = "With --join: the member's data, repeatable; keys of A-Z a-z 0-9 . _ - (1 to 128), values up to 4096 characters.")
  private Map<String, String> data;

  @Option(
      names = "--ttl",
      paramLabel = "DURATION",
      defaultValue = "15s",
      description = "With --join: the slot lease's TTL, 5s to 24h (1ms on memory:) (default: ${DEFAULT-VALUE}).")
  private Duration ttl;

  @Option(
      names = "--timeout",
      paramLabel = "DURATION",
      defaultValue = "10s",
      description = "Without --watch: how long to wait for the answer (with --join: to join), 100ms to 1m (default: ${DEFAULT-VALUE}).")
  private Duration timeout;

  @Override
  public Integer call() throws InterruptedException {
    LeaseCommands.checkName(spec, group);
    LeaseCommands.checkTimeout(spec, timeout);
    if (maxMembers < 1 || maxMembers > Membership.MAX_MAX_MEMBERS) {
      throw new ParameterException(
          spec.commandLine(),
          "--max-members must be between 1 and " + Membership.MAX_MAX_MEMBERS + "; was " + maxMembers);
    }
    if (count != null && (!watch || count < 1 || count > 1_000_000)) {
      throw new ParameterException(
          spec.commandLine(),
          watch ? "--count must be between 1 and 1000000; was " + count : "--count needs --watch");
    }
    String uri = Backends.orDefault(backend);
    Main.quietLibraryLogUnlessVerbose(); // the answer is the output: no INFO lines around it
    if (joinAs != null) {
      checkJoin(uri);
    } else if (data != null) {
      throw new ParameterException(spec.commandLine(), "--data needs --join");
    }
    try (LeaseBackend store = LeaseCommands.open(spec, uri, backend != null)) {
      if (joinAs != null) {
        Membership.Joiner joiner =
            Membership.join(store, group, joinAs).maxMembers(maxMembers).settings(b -> b.ttl(ttl));
        try {
          joiner.data(data != null ? data : Map.of()); // checked here; nothing is sent yet
        } catch (IllegalArgumentException e) {
          throw new ParameterException(spec.commandLine(), "--data: " + e.getMessage());
        }
        String alone = Backends.memoryWarning(uri, "leasehold members", "this member");
        if (alone != null) {
          spec.commandLine().getErr().println("leasehold members: " + alone);
          spec.commandLine().getErr().flush();
        }
        return join(joiner, uri);
      }
      return watch ? watch(store) : list(store, uri);
    }
  }

  /** Checks the --join options before anything is opened. */
  private void checkJoin(String uri) {
    if (watch || json || count != null) {
      throw new ParameterException(spec.commandLine(), "--join cannot be combined with --watch, --json or --count");
    }
    Duration minTtl = Backends.minTtl(uri);
    if (ttl.compareTo(minTtl) < 0 || ttl.compareTo(Backends.MAX_TTL) > 0) {
      throw new ParameterException(
          spec.commandLine(),
          "--ttl must be between " + Durations.format(minTtl) + " and " + Durations.format(Backends.MAX_TTL)
              + "; was " + Durations.format(ttl));
    }
    if (joinAs.isBlank()) {
      throw new ParameterException(spec.commandLine(), "--join: the member id must not be blank");
    }
  }

  /** Joins, stays until Ctrl-C or an interrupt, then leaves; or exits 70 if the slot is lost. */
  private int join(Membership.Joiner joiner, String uri) throws InterruptedException {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    Member member;
    try {
      member = groupChecked(joiner::join).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (UnsupportedOperationException e) {
      return LeaseCommands.fail(err, "members", e.getMessage());
    } catch (TimeoutException e) {
      return LeaseCommands.fail(err, "members", "could not join within " + Durations.format(timeout) + " (" + uri
          + " did not answer in time). " + Backends.unreachableHint(uri));
    } catch (ExecutionException | CompletionException e) {
      return LeaseCommands.storeFailed(err, "members", uri, e);
    }
    AtomicReference<LeaseLost> lost = new AtomicReference<>();
    Thread self = Thread.currentThread();
    try (Foreground fg = new Foreground(); member) {
      member.onLeft(
          reason -> {
            lost.set(reason);
            self.interrupt(); // wakes the wait below
          });
      out.println("joined group '" + group + "' as " + member.memberId() + " in slot " + member.slot() + " with token "
          + member.token() + "; Ctrl-C leaves");
      out.flush();
      fg.await(null);
      LeaseLost why = lost.get();
      if (why != null) {
        err.println("leasehold members: left group '" + group + "' against its will: " + why);
        err.flush();
        return ExitStatus.LOST;
      }
      try {
        member.leave().get(ttl.toMillis(), TimeUnit.MILLISECONDS);
        out.println("left group '" + group + "'");
      } catch (ExecutionException | TimeoutException e) {
        err.println("leasehold members: the store did not confirm the leave; the slot expires within " + Durations.format(ttl));
      }
      out.flush();
      err.flush();
      return 0;
    }
  }

  private int list(LeaseBackend store, String uri) throws InterruptedException {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    try {
      List<GroupMember> members =
          groupChecked(() -> Membership.list(store, group, maxMembers))
              .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      if (json) {
        StringBuilder b = new StringBuilder("{\"group\":").append(LeaseJson.quote(group))
            .append(",\"maxMembers\":").append(maxMembers).append(",\"members\":[");
        for (int i = 0; i < members.size(); i++) {
          b.append(i == 0 ? "" : ",").append(json(members.get(i)));
        }
        out.println(b.append("]}"));
      } else if (members.isEmpty()) {
        slotBeyond(store).ifPresent(slot -> {
          throw new ParameterException(
              spec.commandLine(),
              "--max-members " + maxMembers + " is not the group's slot count: slot " + slot + " of group '" + group
                  + "' is held, so its members joined with --max-members " + (slot + 1) + " or more; give theirs");
        });
        out.println("group '" + group + "' has no members");
      } else {
        out.println("group '" + group + "' has " + members.size() + " member" + (members.size() == 1 ? "" : "s")
            + " (of " + maxMembers + " slots)");
        for (GroupMember m : members) {
          out.println("  " + text(m));
        }
      }
      out.flush();
      return 0;
    } catch (UnsupportedOperationException e) {
      return LeaseCommands.fail(err, "members", e.getMessage());
    } catch (TimeoutException e) {
      return LeaseCommands.noAnswer(err, "members", uri, timeout);
    } catch (ExecutionException | CompletionException e) {
      return LeaseCommands.storeFailed(err, "members", uri, e);
    }
  }

  /**
   * {@return the last held slot beyond {@code --max-members}, if any}: a group looked at with fewer
   * slots than its members joined with looks empty, so an empty answer is checked against every
   * slot a group may have. Best effort: nothing if that cannot be read.
   */
  private java.util.Optional<Integer> slotBeyond(LeaseBackend store) throws InterruptedException {
    if (maxMembers >= Membership.MAX_MAX_MEMBERS) {
      return java.util.Optional.empty();
    }
    try {
      List<GroupMember> all = Membership.list(store, group, Membership.MAX_MAX_MEMBERS)
          .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      return all.stream().map(GroupMember::slot).filter(s -> s >= maxMembers).max(Integer::compare);
    } catch (IllegalArgumentException e) {
      return java.util.Optional.empty(); // a long group name has no slot 1023: nothing to check
    } catch (ExecutionException | TimeoutException | CompletionException e) {
      // Said, not swallowed: "no members" may then be a --max-members smaller than the group's.
      Throwable why = e instanceof TimeoutException ? e : e.getCause() == null ? e : e.getCause();
      spec.commandLine().getErr().println(
          "leasehold members: could not check whether slots beyond --max-members " + maxMembers + " are held ("
              + (e instanceof TimeoutException ? "no answer within --timeout " + Durations.format(timeout) : why.getMessage())
              + ")");
      return java.util.Optional.empty();
    }
  }

  @SuppressWarnings("try") // the Foreground is there for its shutdown hook, not used in the body
  private int watch(LeaseBackend store) throws InterruptedException {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    GroupView view;
    try {
      view =
          groupChecked(
              () ->
                  GroupView.builder(store, group)
                      .maxMembers(maxMembers)
                      .listener(
                          new GroupListener() {
                            @Override
                            public void joined(GroupMember m) {
                              lines.add(line("JOINED", m, null));
                            }

                            @Override
                            public void left(GroupMember m, LeaseEvent.Type why) {
                              lines.add(line("LEFT", m, why));
                            }
                          })
                      .start());
    } catch (UnsupportedOperationException e) {
      return LeaseCommands.fail(err, "members", e.getMessage());
    }
    // Ctrl-C and SIGTERM interrupt the wait for the next line: the end asked for, exit 0.
    try (view; Foreground stop = Foreground.interruptingThisThread()) {
      // Printed here, not on the recipe's thread, so a slow terminal slows nobody.
      for (int printed = 0; count == null || printed < count; printed++) {
        String line = lines.take();
        out.println(line.replace("@TIME@", Instant.now().truncatedTo(ChronoUnit.MILLIS).toString()));
        out.flush();
      }
      return 0;
    } catch (InterruptedException stopped) {
      return 0;
    }
  }

  /** One line of --watch; the time it is printed is filled in when it is. */
  private String line(String type, GroupMember m, LeaseEvent.Type why) {
    if (json) {
      String member = json(m);
      return "{\"time\":\"@TIME@\",\"type\":\"" + type + "\",\"group\":" + LeaseJson.quote(group)
          + ",\"why\":" + (why == null ? "null" : LeaseJson.quote(why.name())) + ",\"member\":" + member + "}";
    }
    return "@TIME@ " + type + " " + text(m) + (why == null ? "" : " " + why);
  }

  private static String text(GroupMember m) {
    StringBuilder b = new StringBuilder(m.memberId()).append(" slot ").append(m.slot())
        .append(" token ").append(m.token());
    m.since().ifPresent(s -> b.append(" since ").append(s));
    for (Map.Entry<String, String> e : m.data().entrySet()) {
      b.append(' ').append(e.getKey()).append('=').append(e.getValue());
    }
    return b.toString();
  }

  private static String json(GroupMember m) {
    StringBuilder b = new StringBuilder("{\"memberId\":").append(LeaseJson.quote(m.memberId()))
        .append(",\"holder\":").append(LeaseJson.quote(m.holder()))
        .append(",\"slot\":").append(m.slot())
        .append(",\"token\":").append(m.token());
    // Only where the store knows it (not on the core), as get --json does.
    m.since().ifPresent(s -> b.append(",\"since\":").append(LeaseJson.quote(s.toString())));
    b.append(",\"data\":{");
    boolean first = true;
    for (Map.Entry<String, String> e : m.data().entrySet()) {
      b.append(first ? "" : ",").append(LeaseJson.quote(e.getKey())).append(':').append(LeaseJson.quote(e.getValue()));
      first = false;
    }
    return b.append("}}").toString();
  }

  /** A group name the recipe rejects (too long for its slot names) is bad usage, naming GROUP. */
  private <T> T groupChecked(java.util.function.Supplier<T> call) {
    try {
      return call.get();
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), "GROUP: " + e.getMessage());
    }
  }
}
