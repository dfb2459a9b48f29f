/**
 * Numeric table columns shared by the per-function tables (jitted functions, tf.functions) and
 * the PyTorch tables: a row field shown as milliseconds (3 decimals), microseconds (1 decimal),
 * a count, a fraction as a percentage, or a percentage (1 decimal).
 * Widths are the content's (components/data_table.tsx).
 */
import type { Column } from "../components/data_table";
import { formatCount, formatFraction, formatMs, formatPercent, formatUs } from "./format";

/** The keys of `Row` whose values are numbers (or null where unknown). */
export type NumberKey<Row> = {
  [K in keyof Row]: Row[K] extends number | null ? K : never;
}[keyof Row] &
  string;

function numberColumn<Row>(
  key: NumberKey<Row>,
  label: string,
  title: string,
  format: (value: number | null) => string,
): Column<Row> {
  const read = (row: Row): number | null => row[key] as number | null;
  return { key, label, title, value: read, render: (row) => format(read(row)), numeric: true };
}

export function msColumn<Row>(key: NumberKey<Row>, label: string, title: string): Column<Row> {
  return numberColumn(key, label, title, formatMs);
}

export function usColumn<Row>(key: NumberKey<Row>, label: string, title: string): Column<Row> {
  return numberColumn(key, label, title, formatUs);
}

export function countColumn<Row>(key: NumberKey<Row>, label: string, title: string): Column<Row> {
  return numberColumn(key, label, title, formatCount);
}

export function fractionColumn<Row>(
  key: NumberKey<Row>,
  label: string,
  title: string,
): Column<Row> {
  return numberColumn(key, label, title, formatFraction);
}

export function percentColumn<Row>(
  key: NumberKey<Row>,
  label: string,
  title: string,
): Column<Row> {
  return numberColumn(key, label, title, formatPercent);
}
