/**
 * Numeric table columns shared by the per-function tables (jitted functions, tf.functions):
 * a row field shown as milliseconds (3 decimals), a count, or a fraction as a percentage.
 * Widths are the content's (components/data_table.tsx).
 */
import type { Column } from "../components/data_table";
import { formatCount, formatFraction, formatMs } from "./format";

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
