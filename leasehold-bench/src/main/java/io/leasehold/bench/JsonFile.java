package io.leasehold.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;

/** Where results go as JSON: the {@code --json} file, else {@code target/bench/<name>-<time>.json}. */
final class JsonFile {

  private JsonFile() {}

  /** {@return the file to write: {@code chosen} if given, else the default under the current directory} */
  static Path resolve(Path chosen, String name) {
    if (chosen != null) {
      return chosen.toAbsolutePath();
    }
    String time = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
    return Path.of("target", "bench", name + "-" + time + ".json").toAbsolutePath();
  }

  /** Writes {@code value} as JSON to {@code file}, making its directory if needed. */
  static void write(Path file, Object value) {
    try {
      Path parent = file.getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      Files.writeString(file, Json.write(value), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the JSON results to " + file, e);
    }
  }
}
