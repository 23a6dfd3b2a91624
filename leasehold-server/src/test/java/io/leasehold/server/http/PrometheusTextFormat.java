package io.leasehold.server.http;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A strict parser of Prometheus's text exposition format 0.0.4, for tests (no parser of it is on
 * Maven Central in Java): every line a HELP, a TYPE or a sample; metric and label names as the
 * format allows; label values with only its three escapes; values as Go's ParseFloat reads them;
 * each family declared once, its TYPE before its samples and its samples together; no sample
 * twice; a summary's samples only {@code _sum}, {@code _count} or with a {@code quantile} label.
 */
public final class PrometheusTextFormat {

  private static final Pattern NAME = Pattern.compile("[a-zA-Z_:][a-zA-Z0-9_:]*");
  private static final Pattern LABEL_NAME = Pattern.compile("[a-zA-Z_][a-zA-Z0-9_]*");
  private static final Pattern VALUE =
      Pattern.compile("[+-]?(?:[0-9]+(?:\\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|\\.[0-9]+(?:[eE][+-]?[0-9]+)?|Inf|NaN)");
  private static final Set<String> TYPES = Set.of("counter", "gauge", "summary", "histogram", "untyped");

  record Sample(String name, Map<String, String> labels, double value) {}

  private PrometheusTextFormat() {}

  /**
   * Parses a scrape.
   *
   * @return samples by family name, in order
   * @throws IllegalArgumentException naming the line that breaks the format
   */
  static Map<String, List<Sample>> parse(String text) {
    if (!text.isEmpty() && !text.endsWith("\n")) {
      throw new IllegalArgumentException("the last line does not end with a line feed");
    }
    Map<String, String> types = new HashMap<>();
    Set<String> helped = new HashSet<>();
    Map<String, List<Sample>> families = new LinkedHashMap<>();
    Set<String> closed = new HashSet<>();
    Set<String> seen = new HashSet<>();
    String current = null;
    int n = 0;
    for (String line : text.split("\n", -1)) {
      n++;
      if (line.isEmpty()) {
        continue;
      }
      String where = "line " + n + " '" + line + "': ";
      if (line.startsWith("#")) {
        String[] parts = line.split(" ", 4);
        if (parts.length >= 3 && (parts[1].equals("HELP") || parts[1].equals("TYPE"))) {
          String name = parts[2];
          require(NAME.matcher(name).matches(), where + "bad metric name");
          if (parts[1].equals("HELP")) {
            require(helped.add(name), where + "a second HELP");
          } else {
            require(parts.length == 4 && TYPES.contains(parts[3]), where + "unknown type");
            require(!types.containsKey(name), where + "a second TYPE");
            require(!families.containsKey(name), where + "TYPE after the family's samples");
            types.put(name, parts[3]);
          }
          if (current != null && !current.equals(name)) {
            closed.add(current);
          }
          require(!closed.contains(name), where + "the family " + name + " appears twice");
          current = name;
        }
        continue; // other comments are allowed
      }
      Matcher m = Pattern.compile("^(" + NAME.pattern() + ")(\\{(.*)\\})? (\\S+)( -?[0-9]+)?$").matcher(line);
      require(m.matches(), where + "not a sample line");
      String name = m.group(1);
      Map<String, String> labels = m.group(3) == null ? Map.of() : labels(m.group(3), where);
      require(VALUE.matcher(m.group(4)).matches(), where + "bad value");
      String family = familyOf(name, types);
      if (types.get(family) != null && types.get(family).equals("summary")) {
        require(
            name.equals(family + "_sum") || name.equals(family + "_count") || (name.equals(family) && labels.containsKey("quantile")),
            where + "not a summary's sample");
      }
      if (current != null && !current.equals(family)) {
        closed.add(current);
      }
      require(!closed.contains(family), where + "the family " + family + " is not together");
      current = family;
      require(seen.add(name + labels), where + "the same sample twice");
      String v = m.group(4);
      double value = v.endsWith("Inf") ? (v.startsWith("-") ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY)
          : v.equals("NaN") ? Double.NaN : Double.parseDouble(v);
      families.computeIfAbsent(family, f -> new ArrayList<>()).add(new Sample(name, labels, value));
    }
    return families;
  }

  private static String familyOf(String name, Map<String, String> types) {
    for (String suffix : List.of("_sum", "_count", "_bucket")) {
      if (name.endsWith(suffix)) {
        String base = name.substring(0, name.length() - suffix.length());
        String t = types.get(base);
        if (t != null && (t.equals("summary") || t.equals("histogram"))) {
          return base;
        }
      }
    }
    return name;
  }

  private static Map<String, String> labels(String s, String where) {
    Map<String, String> labels = new LinkedHashMap<>();
    int i = 0;
    while (i < s.length()) {
      int eq = s.indexOf('=', i);
      require(eq > i, where + "bad label");
      String name = s.substring(i, eq);
      require(LABEL_NAME.matcher(name).matches(), where + "bad label name '" + name + "'");
      require(eq + 1 < s.length() && s.charAt(eq + 1) == '"', where + "label value not quoted");
      StringBuilder value = new StringBuilder();
      int j = eq + 2;
      while (true) {
        require(j < s.length(), where + "unterminated label value");
        char c = s.charAt(j);
        if (c == '\\') {
          require(j + 1 < s.length(), where + "bad escape");
          char e = s.charAt(j + 1);
          require(e == '\\' || e == '"' || e == 'n', where + "bad escape \\" + e);
          value.append(e == 'n' ? '\n' : e);
          j += 2;
        } else if (c == '"') {
          break;
        } else {
          require(c != '\n', where + "line feed in a label value");
          value.append(c);
          j++;
        }
      }
      require(labels.put(name, value.toString()) == null, where + "label " + name + " twice");
      i = j + 1;
      if (i < s.length()) {
        require(s.charAt(i) == ',', where + "labels not separated by ','");
        i++;
      }
    }
    return labels;
  }

  private static void require(boolean ok, String message) {
    if (!ok) {
      throw new IllegalArgumentException(message);
    }
  }
}
