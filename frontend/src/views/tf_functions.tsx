/**
 * The overview's tf.functions table: per tf.function, how often the program called it and for
 * how long (the call as the host saw it), from the document's `tf_functions` (docs/api.md).
 *
 * Columns: the function (marked "traced N×" when more than one concrete function was called:
 * retracing), calls, mean/min/max call time in ms (3 decimals), total ms and its share of all
 * calls' time. Shown only when the profile called tf.functions; a CSV link downloads the same
 * rows.
 *
 * Hooks: tf-functions-section, tf-functions-table, tf-function-row (data-function,
 * data-concrete) with tf-function-row-<column> cells, tf-functions-csv.
 */
import { DataTable, type Column } from "../components/data_table";
import { formatCount, list, num, record, str } from "./format";
import { countColumn, fractionColumn, msColumn } from "./number_columns";
import { CsvLink, type DocSectionProps, Section } from "./widgets";

export interface TfFunctionRow {
  readonly function: string;
  readonly calls: number | null;
  readonly concrete: number | null;
  readonly mean_ms: number | null;
  readonly min_ms: number | null;
  readonly max_ms: number | null;
  readonly total_ms: number | null;
  readonly fraction: number | null;
}

export function tfFunctionRowsOf(value: unknown): readonly TfFunctionRow[] {
  return list(value).map((item) => {
    const row = record(item);
    return {
      function: str(row["function"]),
      calls: num(row["calls"]),
      concrete: num(row["concrete"]),
      mean_ms: num(row["mean_ms"]),
      min_ms: num(row["min_ms"]),
      max_ms: num(row["max_ms"]),
      total_ms: num(row["total_ms"]),
      fraction: num(row["fraction"]),
    };
  });
}

const COLUMNS: readonly Column<TfFunctionRow>[] = [
  {
    key: "function",
    label: "tf.function",
    value: (row) => row.function,
    render: (row) =>
      (row.concrete ?? 0) > 1 ? (
        <>
          {row.function}{" "}
          <span class="badge badge-no" title="More than one concrete function was called: retracing">
            traced {formatCount(row.concrete)}×
          </span>
        </>
      ) : (
        row.function
      ),
    ellipsis: true,
  },
  countColumn("calls", "Calls", "Calls of the function on the host"),
  msColumn("mean_ms", "Mean ms", "Mean call time (ms), as the host saw the call"),
  msColumn("min_ms", "Min ms", "Shortest call (ms)"),
  msColumn("max_ms", "Max ms", "Longest call (ms)"),
  msColumn("total_ms", "Total ms", "All calls together (ms)"),
  fractionColumn("fraction", "Share %", "Share of all tf.function calls' time"),
];

export function TfFunctions({ doc, run, view, host }: DocSectionProps) {
  const rows = tfFunctionRowsOf(doc["tf_functions"]);
  if (rows.length === 0) return null;
  return (
    <Section
      title="tf.functions"
      testid="tf-functions-section"
      aside={
        <CsvLink run={run} view={view} host={host} table="tf_functions" testid="tf-functions-csv" />
      }
    >
      <DataTable
        rows={rows}
        columns={COLUMNS}
        testid="tf-functions-table"
        rowTestid="tf-function-row"
        rowKey={(row) => row.function}
        rowAttributes={(row) => ({
          "data-function": row.function,
          "data-concrete": String(row.concrete ?? ""),
        })}
        empty="No tf.function was called."
      />
    </Section>
  );
}
