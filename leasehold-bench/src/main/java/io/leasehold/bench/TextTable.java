package io.leasehold.bench;

import java.util.ArrayList;
import java.util.List;

/** A plain text table: the first column left-aligned, the others right-aligned. */
final class TextTable {

  private final List<String[]> rows = new ArrayList<>();
  private final int columns;

  TextTable(String... header) {
    this.columns = header.length;
    rows.add(header);
  }

  TextTable row(String... cells) {
    if (cells.length != columns) {
      throw new IllegalArgumentException("row has " + cells.length + " cells, table has " + columns);
    }
    rows.add(cells);
    return this;
  }

  String render(String indent) {
    int[] width = new int[columns];
    for (String[] r : rows) {
      for (int i = 0; i < columns; i++) {
        width[i] = Math.max(width[i], r[i].length());
      }
    }
    StringBuilder out = new StringBuilder();
    for (int r = 0; r < rows.size(); r++) {
      StringBuilder line = new StringBuilder(indent);
      for (int i = 0; i < columns; i++) {
        String cell = rows.get(r)[i];
        String pad = " ".repeat(width[i] - cell.length());
        line.append(i == 0 ? cell + pad : "  " + pad + cell);
      }
      out.append(line.toString().stripTrailing()).append('\n');
      if (r == 0) {
        out.append(indent).append("-".repeat(line.length() - indent.length())).append('\n');
      }
    }
    return out.toString();
  }
}
