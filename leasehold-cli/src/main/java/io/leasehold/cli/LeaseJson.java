package io.leasehold.cli;

import io.leasehold.LeaseEvent;
import io.leasehold.LeaseHolding;
import io.leasehold.LeaseState;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;

/** One-line JSON for {@code leasehold get --json} and {@code leasehold watch --json}. */
final class LeaseJson {

  private LeaseJson() {}

  static String state(LeaseState state) {
    StringBuilder b = new StringBuilder("{\"name\":").append(quote(state.name()));
    holding(b, state.holding());
    b.append(",\"attached\":{");
    boolean first = true;
    for (Map.Entry<String, String> e : state.attached().entrySet()) {
      b.append(first ? "" : ",").append(quote(e.getKey())).append(':').append(quote(e.getValue()));
      first = false;
    }
    return b.append("}}").toString();
  }

  static String event(Instant seenAt, LeaseEvent event) {
    StringBuilder b =
        new StringBuilder("{\"time\":")
            .append(quote(seenAt.toString()))
            .append(",\"type\":")
            .append(quote(event.type().name()))
            .append(",\"name\":")
            .append(quote(event.name()));
    holding(b, event.holding());
    return b.append(",\"detail\":").append(quote(event.detail())).append('}').toString();
  }

  /**
   * The holder, owner and token (null when free), and {@code since} only where the store knows
   * it: the core does not keep when a tenure began, and a field that is null on every line of a
   * store says nothing.
   */
  private static void holding(StringBuilder b, Optional<LeaseHolding> holding) {
    if (holding.isEmpty()) {
      b.append(",\"holder\":null,\"owner\":null,\"token\":null");
      return;
    }
    LeaseHolding h = holding.get();
    b.append(",\"holder\":").append(quote(h.holder()))
        .append(",\"owner\":").append(quote(h.owner()))
        .append(",\"token\":").append(h.token());
    h.since().ifPresent(s -> b.append(",\"since\":").append(quote(s.toString())));
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"').toString();
  }
}
