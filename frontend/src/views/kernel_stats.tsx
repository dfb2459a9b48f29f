/**
 * kernel_stats: the GPU kernels each op launched, with launch shape, Tensor Core use and time.
 *
 * From the top: figure cards (total kernel time, the share of it in kernels that use Tensor
 * Cores, the share launched by ops that could use them, the number of kernels), a pie of
 * the kernels with the most total time (top 10, the rest as Other), then the kernel table:
 * every column of the document (dimensions as `x,y,z`, Tensor Core flags as yes/no badges;
 * the shared memory's static and dynamic parts in its cell's title; dense cells and narrow
 * name columns, so the whole row fits a 1280 px window),
 * sortable, filterable by kernel name and by op name, 100 rows a page, downloadable as CSV.
 * On XLA captures an HLO op column follows the op column. Long kernel and op names are cut in
 * the middle, the full name in the cell's title. A GPU profile without kernels shows the
 * server's explanation (its warnings) instead.
 *
 * Hooks: kernel-view (data-rows), kernel-total-us, kernel-tc-percent,
 * kernel-eligible-percent, kernel-count, kernel-hosts with kernel-host-count (several hosts),
 * pie-kernel (see share_pie.tsx), the table `kernel` (kernel-sort-<column>, kernel-filter
 * (kernel name), kernel-filter-op (op name), kernel-row-count, kernel-page-*), kernel-row
 * (data-kernel-name, data-op-name) with kernel-row-<column> cells, badges with class
 * `badge` and `data-value` yes/no, csv-link, kernel-empty (no kernels).
 */
import { useMemo } from "preact/hooks";
import { DataTable, type Column, type Filter } from "../components/data_table";
import { DiagnosticsPanel } from "./diagnostics";
import {
  bool,
  formatCount,
  formatPercent,
  formatUs,
  list,
  num,
  percentOf,
  plural,
  record,
  str,
} from "./format";
import { SharePie, sumBy } from "./share_pie";
import { diagnosticsOf, type ViewProps } from "./types";
import { Card, CsvLink, Figure, Section } from "./widgets";

type Dim = readonly [number, number, number];

export interface KernelRow {
  readonly rank: number | null;
  readonly kernel_name: string;
  readonly registers_per_thread: number | null;
  readonly shared_memory_bytes: number | null;
  readonly static_shared_memory_bytes: number | null;
  readonly dynamic_shared_memory_bytes: number | null;
  readonly block_dim: Dim | null;
  readonly grid_dim: Dim | null;
  readonly occupancy_percent: number | null;
  readonly op_tensor_core_eligible: boolean | null;
  readonly uses_tensor_core: boolean | null;
  readonly op_name: string;
  readonly hlo_op: string;
  readonly occurrences: number | null;
  readonly total_duration_us: number | null;
  readonly avg_duration_us: number | null;
  readonly min_duration_us: number | null;
  readonly max_duration_us: number | null;
}

function dimOf(value: unknown): Dim | null {
  const [x, y, z] = list(value).map(num);
  return x != null && y != null && z != null ? [x, y, z] : null;
}

function kernelRowsOf(value: unknown): readonly KernelRow[] {
  return list(value).map((item) => {
    const row = record(item);
    return {
      rank: num(row["rank"]),
      kernel_name: str(row["kernel_name"]),
      registers_per_thread: num(row["registers_per_thread"]),
      shared_memory_bytes: num(row["shared_memory_bytes"]),
      static_shared_memory_bytes: num(row["static_shared_memory_bytes"]),
      dynamic_shared_memory_bytes: num(row["dynamic_shared_memory_bytes"]),
      block_dim: dimOf(row["block_dim"]),
      grid_dim: dimOf(row["grid_dim"]),
      occupancy_percent: num(row["occupancy_percent"]),
      op_tensor_core_eligible: bool(row["op_tensor_core_eligible"]),
      uses_tensor_core: bool(row["uses_tensor_core"]),
      op_name: str(row["op_name"]),
      hlo_op: str(row["hlo_op"]),
      occurrences: num(row["occurrences"]),
      total_duration_us: num(row["total_duration_us"]),
      avg_duration_us: num(row["avg_duration_us"]),
      min_duration_us: num(row["min_duration_us"]),
      max_duration_us: num(row["max_duration_us"]),
    };
  });
}

/** A yes/no badge for a Tensor Core flag ("—" when the document lacks it). */
function Badge({ value }: { value: boolean | null }) {
  if (value === null) return <>—</>;
  const text = value ? "yes" : "no";
  return (
    <span class={`badge badge-${text}`} data-value={text}>
      {text}
    </span>
  );
}

type DurationKey = "total_duration_us" | "avg_duration_us" | "min_duration_us" | "max_duration_us";
type CountKey =
  | "rank"
  | "registers_per_thread"
  | "shared_memory_bytes"
  | "occurrences";

function duration(key: DurationKey, label: string, title: string): Column<KernelRow> {
  return {
    key,
    label,
    title,
    value: (row) => row[key],
    render: (row) => formatUs(row[key]),
    numeric: true,
    width: "6.5em",
  };
}

function count(key: CountKey, label: string, title: string, width: string): Column<KernelRow> {
  return {
    key,
    label,
    title,
    value: (row) => row[key],
    render: (row) => formatCount(row[key]),
    numeric: true,
    width,
  };
}

/** How a row's shared memory divides: static + dynamic where the profiler split it, else
 * that it wrote one total (TF <= 2.4 `shm:`, ROCm's LDS `group_mem:`). */
function sharedTitle(row: KernelRow): string {
  const { static_shared_memory_bytes: fixed, dynamic_shared_memory_bytes: dynamic } = row;
  if (fixed === null && dynamic === null) {
    return row.shared_memory_bytes === null
      ? "not recorded by the profiler"
      : "one total: the profiler does not split it into static and dynamic";
  }
  return `static ${formatCount(fixed)} B + dynamic ${formatCount(dynamic)} B`;
}

function dim(key: "block_dim" | "grid_dim", label: string, title: string): Column<KernelRow> {
  return {
    key,
    label,
    title: `${title}; sorts by the product`,
    value: (row) => {
      const d = row[key];
      return d ? d[0] * d[1] * d[2] : null;
    },
    render: (row) => row[key]?.join(",") ?? "—",
    numeric: true,
    width: "7.5em",
  };
}

function flag(
  key: "op_tensor_core_eligible" | "uses_tensor_core",
  label: string,
  title: string,
  width: string,
): Column<KernelRow> {
  return {
    key,
    label,
    title,
    value: (row) => (row[key] === null ? null : row[key] ? "yes" : "no"),
    render: (row) => <Badge value={row[key]} />,
    width,
  };
}

/** The name columns' least width: with 14 figure columns, the three names (kernel, op, HLO op)
 * get what is left of a 1280 px window, so the whole row shows without scrolling sideways;
 * wider windows give the names the rest (full names on hover, in the pie and the CSV). */
const NAME_MIN_EM = "6.5em";

const COLUMNS: readonly Column<KernelRow>[] = [
  count("rank", "#", "Rank by total time", "3.5em"),
  {
    key: "kernel_name",
    label: "Kernel",
    value: (row) => row.kernel_name,
    ellipsis: true,
    width: NAME_MIN_EM,
  },
  {
    key: "op_name",
    label: "Op",
    title: "The op that launched the kernel: the TensorFlow op, or the JAX op path",
    value: (row) => row.op_name,
    render: (row) => row.op_name || "—",
    ellipsis: true,
    width: NAME_MIN_EM,
  },
  count("occurrences", "Count", "Occurrences: how many times the kernel was launched", "5.5em"),
  duration("total_duration_us", "Total µs", "Total time of all launches (µs)"),
  duration("avg_duration_us", "Avg µs", "Average time per launch (µs)"),
  duration("min_duration_us", "Min µs", "Shortest launch (µs)"),
  duration("max_duration_us", "Max µs", "Longest launch (µs)"),
  flag("uses_tensor_core", "Uses TC", "The kernel uses Tensor Cores", "6.5em"),
  flag(
    "op_tensor_core_eligible",
    "TC eligible",
    "The launching op is of a kind that can use Tensor Cores",
    "7em",
  ),
  {
    key: "occupancy_percent",
    label: "Occu\u00adpancy %",
    title: "Theoretical occupancy (%)",
    value: (row) => row.occupancy_percent,
    render: (row) => formatPercent(row.occupancy_percent),
    numeric: true,
    width: "8em",
  },
  count("registers_per_thread", "Regis\u00adters", "Registers per thread", "6.5em"),
  {
    ...count("shared_memory_bytes", "Shared mem (B)", "Shared memory per block (bytes)", ""),
    render: (row) => (
      <span
        data-static-bytes={String(row.static_shared_memory_bytes ?? "")}
        data-dynamic-bytes={String(row.dynamic_shared_memory_bytes ?? "")}
        title={sharedTitle(row)}
      >
        {formatCount(row.shared_memory_bytes)}
      </span>
    ),
  },
  dim("block_dim", "Block", "Threads per block, x,y,z"),
  dim("grid_dim", "Grid", "Blocks per grid, x,y,z"),
];

/** Shown after the op column when some kernel has an HLO op (XLA captures). */
const HLO_OP_COLUMN: Column<KernelRow> = {
  key: "hlo_op",
  label: "HLO op",
  title: "The HLO op the kernel ran, as XLA names it",
  value: (row) => row.hlo_op,
  render: (row) => row.hlo_op || "—",
  ellipsis: true,
  width: NAME_MIN_EM,
};

/** The kernel table's columns: the HLO op column only where some row has one. */
function columnsFor(rows: readonly KernelRow[]): readonly Column<KernelRow>[] {
  if (!rows.some((row) => row.hlo_op !== "")) return COLUMNS;
  const afterOp = COLUMNS.findIndex((column) => column.key === "op_name") + 1;
  return [...COLUMNS.slice(0, afterOp), HLO_OP_COLUMN, ...COLUMNS.slice(afterOp)];
}


const FILTERS: readonly Filter<KernelRow>[] = [
  { key: "kernel_name", label: "Filter by kernel name", text: (row) => row.kernel_name },
  { key: "op", label: "Filter by op name", text: (row) => row.op_name },
];

function totalUs(rows: readonly KernelRow[], keep: (row: KernelRow) => boolean = () => true) {
  return rows.reduce((sum, row) => sum + (keep(row) ? (row.total_duration_us ?? 0) : 0), 0);
}

export function KernelStats({ doc, run, view, host }: ViewProps) {
  const rows = useMemo(() => kernelRowsOf(doc["rows"]), [doc]);
  const byKernel = useMemo(
    () => sumBy(rows, (row) => row.kernel_name, (row) => row.total_duration_us ?? 0),
    [rows],
  );
  const columns = useMemo(() => columnsFor(rows), [rows]);
  const total = totalUs(rows);
  const diagnostics = diagnosticsOf(doc);
  const panel = <DiagnosticsPanel diagnostics={diagnostics} />;
  const hostCount = num(doc["host_count"]);

  return (
    <div
      class="analysis-view kernel-stats"
      data-testid="kernel-view"
      data-rows={String(rows.length)}
    >
      {hostCount !== null && hostCount > 1 ? (
        <div class="view-toolbar">
          <span class="toolbar-note" data-testid="kernel-hosts">
            summed over <span data-testid="kernel-host-count">{hostCount}</span> hosts
          </span>
        </div>
      ) : null}

      {rows.length === 0 ? (
        <div class="state notice kernel-empty" data-testid="kernel-empty">
          <strong>No GPU kernels to list.</strong>
          {diagnostics.warnings.length > 0 ? (
            <ul class="kernel-empty-reasons">
              {diagnostics.warnings.map((text, index) => (
                <li key={index}>{text}</li>
              ))}
            </ul>
          ) : (
            <p>The profile holds no kernel with launch details.</p>
          )}
        </div>
      ) : null}

      {rows.length > 0 ? (
        <>
          <div class="cards">
            <Card title="Kernel time" testid="card-kernel-time">
              <p class="card-main">
                <Figure testid="kernel-total-us" value={formatUs(total)} unit="µs" big />
              </p>
              <p class="card-sub">
                <Figure testid="kernel-count" value={String(byKernel.length)} />{" "}
                {byKernel.length === 1 ? "kernel" : "kernels"}, {plural(rows.length, "row")}
              </p>
            </Card>
            <Card title="On Tensor Cores" testid="card-kernel-tc">
              <p class="card-main">
                <Figure
                  testid="kernel-tc-percent"
                  value={formatPercent(
                    percentOf(totalUs(rows, (row) => row.uses_tensor_core === true), total),
                  )}
                  unit="%"
                  big
                />
              </p>
              <p class="card-sub">of kernel time is in kernels that use Tensor Cores</p>
            </Card>
            <Card title="Tensor Core eligible" testid="card-kernel-eligible">
              <p class="card-main">
                <Figure
                  testid="kernel-eligible-percent"
                  value={formatPercent(
                    percentOf(totalUs(rows, (row) => row.op_tensor_core_eligible === true), total),
                  )}
                  unit="%"
                  big
                />
              </p>
              <p class="card-sub">of kernel time was launched by ops that can use them</p>
            </Card>
          </div>

          <Section title="Kernels with the most time" testid="kernel-pie-section">
            <div class="pies">
              <SharePie
                title="Total time per kernel"
                parts={byKernel}
                total={total}
                unit="µs"
                testid="pie-kernel"
              />
            </div>
          </Section>
        </>
      ) : null}

      {rows.length > 0 ? (
        <Section
          title="Kernels"
          testid="kernel-table-section"
          aside={<CsvLink run={run} view={view} host={host} table="rows" testid="csv-link" />}
        >
          <DataTable
            rows={rows}
            columns={columns}
            testid="kernel"
            rowTestid="kernel-row"
            rowKey={(row, index) => `${index} ${row.kernel_name}`}
            rowAttributes={(row) => ({
              "data-kernel-name": row.kernel_name,
              "data-op-name": row.op_name,
            })}
            sortable
            filters={FILTERS}
            pageSize={100}
            dense
            empty="No kernels: see the diagnostics."
          />
        </Section>
      ) : null}

      {panel}
    </div>
  );
}
