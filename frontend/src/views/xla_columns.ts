/**
 * What the XLA side says of an op row, and the optional table columns that show it.
 *
 * On XLA captures (JAX, TPU, TF with XLA) the server adds to a device op row its HLO ops
 * (`hlo_op`, comma-separated), its XLA module (`module`), and where the profile counts FLOPs
 * and bytes, the achieved rates over the op's device time (`flop_rate_gflops_per_s`,
 * `memory_bandwidth_gb_per_s`). A table shows a column only when some row has its value, so
 * a TensorFlow CPU profile keeps its usual columns. Rates are shown with 1 decimal, the unit
 * in the header.
 */
import type { Column } from "../components/data_table";
import { formatUs, MISSING, num, str } from "./format";

export interface XlaFacts {
  readonly hlo_op: string;
  readonly module: string;
  readonly flop_rate_gflops_per_s: number | null;
  readonly memory_bandwidth_gb_per_s: number | null;
}

/** The XLA facts of one row of a view document (empty strings and nulls where absent). */
export function xlaFactsOf(row: Readonly<Record<string, unknown>>): XlaFacts {
  return {
    hlo_op: str(row["hlo_op"]),
    module: str(row["module"]),
    flop_rate_gflops_per_s: num(row["flop_rate_gflops_per_s"]),
    memory_bandwidth_gb_per_s: num(row["memory_bandwidth_gb_per_s"]),
  };
}

type TextKey = "hlo_op" | "module";
type RateKey = "flop_rate_gflops_per_s" | "memory_bandwidth_gb_per_s";

function text<Row extends XlaFacts>(key: TextKey, label: string, title: string, width: string) {
  const column: Column<Row> = {
    key,
    label,
    title,
    value: (row) => row[key],
    render: (row) => row[key] || MISSING,
    ellipsis: true,
    width,
  };
  return column;
}

function rate<Row extends XlaFacts>(key: RateKey, label: string, title: string, width: string) {
  const column: Column<Row> = {
    key,
    label,
    title,
    value: (row) => row[key],
    // One decimal, as the µs columns.
    render: (row) => formatUs(row[key]),
    numeric: true,
    width,
  };
  return column;
}

/**
 * The XLA columns that at least one of `rows` has a value for, in a fixed order: HLO op,
 * module (only when `withModule`), GFLOP/s, GB/s.
 */
export function xlaColumns<Row extends XlaFacts>(
  rows: readonly Row[],
  withModule = false,
): Column<Row>[] {
  const has = (present: (row: Row) => boolean) => rows.some(present);
  const columns: Column<Row>[] = [];
  if (has((row) => row.hlo_op !== "")) {
    columns.push(text<Row>("hlo_op", "HLO op", "The HLO ops the op ran, as XLA names them", "9em"));
  }
  if (withModule && has((row) => row.module !== "")) {
    columns.push(text<Row>("module", "XLA module", "The XLA module (program) of the op", "9em"));
  }
  if (has((row) => row.flop_rate_gflops_per_s !== null)) {
    columns.push(
      rate<Row>(
        "flop_rate_gflops_per_s",
        "GFLOP/s",
        "Achieved FLOP rate over the op's device time (GFLOP/s), from XLA's FLOP count",
        "6.5em",
      ),
    );
  }
  if (has((row) => row.memory_bandwidth_gb_per_s !== null)) {
    columns.push(
      rate<Row>(
        "memory_bandwidth_gb_per_s",
        "GB/s",
        "Achieved memory bandwidth over the op's device time (GB/s), from XLA's byte count",
        "6em",
      ),
    );
  }
  return columns;
}
