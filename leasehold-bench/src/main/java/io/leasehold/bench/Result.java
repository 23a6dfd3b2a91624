package io.leasehold.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What one workload measured on one store: its parameters, its figures in a fixed order, the
 * errors by kind, notes for the reader and details (per round, per member) for the JSON file.
 * Built by one thread once the workload has finished.
 */
final class Result {

  private final String workload;
  private final String store;
  private final Map<String, Object> params = new LinkedHashMap<>();
  private final List<Figure> figures = new ArrayList<>();
  private final Map<String, Long> errors = new LinkedHashMap<>();
  private final List<String> notes = new ArrayList<>();
  private String storeSettings;
  private final Map<String, Object> details = new LinkedHashMap<>();
  private final Map<String, List<Double>> samples = new LinkedHashMap<>();

  Result(String workload, String store) {
    this.workload = workload;
    this.store = store;
  }

  String workload() {
    return workload;
  }

  String store() {
    return store;
  }

  Result param(String name, Object value) {
    params.put(name, value);
    return this;
  }

  Result figure(String key, String label, double value, String unit) {
    figures.add(new Figure(key, label, value, unit));
    return this;
  }

  Result errors(ErrorCounts counts) {
    errors.putAll(counts.byKind());
    return this;
  }

  /** Records the store's durability and timing settings, as its cluster describes them. */
  Result storeSettings(String settings) {
    this.storeSettings = settings;
    return this;
  }

  Result note(String note) {
    notes.add(note);
    return this;
  }

  Result detail(String name, Object value) {
    details.put(name, value);
    return this;
  }

  /**
   * Keeps the single measurements behind a figure (one per failover kill, say), so that a compare
   * run can pool them over its rounds instead of taking a median of per-round percentiles.
   */
  Result samples(String key, List<Double> values) {
    samples.put(key, List.copyOf(values));
    return this;
  }

  /** {@return the measurements kept under {@code key}; empty if none} */
  List<Double> samples(String key) {
    return samples.getOrDefault(key, List.of());
  }

  Map<String, Object> params() {
    return params;
  }

  List<Figure> figures() {
    return figures;
  }

  Map<String, Long> errors() {
    return errors;
  }

  long errorTotal() {
    return errors.values().stream().mapToLong(Long::longValue).sum();
  }

  List<String> notes() {
    return notes;
  }

  /** {@return whether a figure that must be 0 (spurious losses, fencing-token regressions) is not} */
  boolean safetyViolated() {
    return value("spurious_losses") > 0 || value("flood_spurious_losses") > 0 || value("token_regressions") > 0;
  }

  /** {@return the figure named {@code key}, if this result has it} */
  Optional<Figure> get(String key) {
    return figures.stream().filter(f -> f.key().equals(key)).findFirst();
  }

  /** {@return the value of {@code key}, or NaN if absent} */
  double value(String key) {
    return get(key).map(Figure::value).orElse(Double.NaN);
  }

  /** {@return this result as JSON-ready maps and lists} */
  Map<String, Object> toJson() {
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("workload", workload);
    json.put("store", store);
    json.put("params", params);
    json.put("store_settings", storeSettings);
    Map<String, Object> values = new LinkedHashMap<>();
    Map<String, Object> units = new LinkedHashMap<>();
    for (Figure f : figures) {
      values.put(f.key(), f.measured() ? f.value() : null);
      units.put(f.key(), f.unit());
    }
    json.put("figures", values);
    json.put("units", units);
    json.put("errors", errors);
    json.put("notes", notes);
    json.put("details", details);
    if (!samples.isEmpty()) {
      json.put("samples", samples);
    }
    return json;
  }

  /** {@return the human table: one line per figure, then errors and notes} */
  String toTable() {
    StringBuilder out = new StringBuilder();
    out.append(workload).append(" on ").append(store).append('\n');
    StringBuilder p = new StringBuilder();
    params.forEach((k, v) -> p.append(p.length() == 0 ? "" : ", ").append(k).append(' ').append(v));
    out.append("  ").append(p).append('\n');
    if (storeSettings != null) {
      out.append("  store: ").append(storeSettings).append('\n');
    }
    TextTable table = new TextTable("figure", "value", "unit");
    for (Figure f : figures) {
      table.row(f.label(), f.formatted(), f.unit());
    }
    out.append(table.render("  "));
    out.append("  errors: ").append(errors.isEmpty() ? "none" : "").append('\n');
    errors.forEach((k, v) -> out.append("    ").append(v).append(" × ").append(k).append('\n'));
    for (String n : notes) {
      out.append("  note: ").append(n).append('\n');
    }
    return out.toString();
  }
}
