package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/**
 * docs/cli.md's flag tables against the commands themselves: each section's table names every
 * option the command's picocli spec has (what {@code --help} lists), and no other, so the page
 * and the command cannot drift apart (as {@code LeaseSettingsTest} holds the settings table to
 * the code).
 */
class DocsFlagTablesTest {

  /** Each section of docs/cli.md, by its heading, and the commands its table documents. */
  private static final Map<String, List<String>> SECTIONS =
      Map.ofEntries(
          Map.entry("## `dev`", List.of("dev")),
          Map.entry("## `server`", List.of("server")),
          Map.entry("## `status`", List.of("status")),
          Map.entry("## `revoke NAME`", List.of("revoke")),
          Map.entry("## `acl grant", List.of("acl grant", "acl revoke", "acl list")),
          Map.entry("## `members GROUP`", List.of("members")),
          Map.entry("## `run`", List.of("run")),
          Map.entry("## `demo`", List.of("demo")),
          Map.entry("## `admin transfer-leader`", List.of("admin transfer-leader")),
          Map.entry("## `admin snapshot save FILE`", List.of("admin snapshot save")),
          Map.entry(
              "## `admin members`",
              List.of("admin members", "admin add-node", "admin remove-node", "admin replace-node")));

  /** Every command's: docs/cli.md says them once, under "Every command". */
  private static final Set<String> COMMON = Set.of("--help", "--version", "--verbose");

  static Set<String> sections() {
    return new TreeSet<>(SECTIONS.keySet());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("sections")
  void theTableNamesEveryFlagOfTheCommandAndNoOther(String heading) throws IOException {
    Set<String> documented = flagsInTable(section(heading));
    Set<String> real = new TreeSet<>();
    for (String command : SECTIONS.get(heading)) {
      CommandLine cmd = Main.commandLine();
      for (String name : command.split(" ")) {
        cmd = cmd.getSubcommands().get(name);
        assertThat(cmd).as("command %s", command).isNotNull();
      }
      for (OptionSpec option : cmd.getCommandSpec().options()) {
        if (!COMMON.contains(option.longestName())) {
          real.add(option.longestName());
        }
      }
    }
    assertThat(documented).as("the flags of %s in docs/cli.md, against its --help", heading).isEqualTo(real);
  }

  private static String section(String heading) throws IOException {
    String docs = Files.readString(Path.of("../docs/cli.md"));
    int start = docs.indexOf("\n" + heading);
    assertThat(start).as("docs/cli.md has a section %s", heading).isGreaterThanOrEqualTo(0);
    int end = docs.indexOf("\n## ", start + 1);
    return docs.substring(start, end < 0 ? docs.length() : end);
  }

  /** The first cell of each table row that names a flag: {@code | `--nodes N` | ...}. */
  private static Set<String> flagsInTable(String section) {
    Set<String> flags = new TreeSet<>();
    Matcher row = Pattern.compile("(?m)^\\| `(--[a-z-]+)[^`]*`").matcher(section);
    while (row.find()) {
      flags.add(row.group(1));
    }
    assertThat(flags).as("a table of flags").isNotEmpty();
    return flags;
  }
}
