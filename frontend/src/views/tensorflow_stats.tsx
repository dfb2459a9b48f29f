/**
 * tensorflow_stats: every op on the device and on the host, with its time and share.
 *
 * From the top: a tool bar (the "Include IDLE" switch, the number of device and host ops,
 * "summed over N hosts" for ALL_HOSTS), pies of self time per op and per op type for the
 * device (only when the profile has device rows) and for the host, then the op table:
 * sortable, filterable by op name, 100 rows a page (every row reachable, the count always
 * shown), downloadable as CSV. Times are in µs (1 decimal), shares in % (1 decimal) of the
 * side's total self time, IDLE included when it is. The Tensor Core column appears only
 * when the document has `gpu_tensor_core_utilization` (GPU profiles); HLO op, GFLOP/s and GB/s
 * columns when rows carry XLA facts (see xla_columns.ts).
 *
 * One switch for IDLE, off by default: pies and table start without it, as the reference's
 * pies do (IDLE is often most of the time: a pie 80 % IDLE hides the ops, and a table with it
 * reads every op's Self % near 0). The switch is a view parameter (`include_idle`; the page
 * asks for `false` unless the URL says `true`, registry.ts): changing it is a history entry
 * and a re-fetch; the view stays, with its sort, filter and page, and `data-include-idle` on
 * its root says which document it shows. The CSV link asks for what is shown.
 *
 * Hooks: tfstats-view (data-include-idle, data-rows), idle-toggle, tfstats-pies (with
 * data-pie-idle), tfstats-no-ops (why there is no row),
 * tfstats-num-device-rows,
 * tfstats-num-host-rows, tfstats-hosts with tfstats-host-count (only for several hosts),
 * pie-device-op, pie-device-type, pie-host-op, pie-host-type (see share_pie.tsx), the table
 * `tfstats` (tfstats-sort-<column>, tfstats-filter, tfstats-row-count, tfstats-page-*),
 * tfstats-row (data-op-name, data-side, data-rank) with tfstats-row-<column> cells, csv-link.
 * PyTorch runs add, after the op table, the operators' host and device time and the operators
 * by input shape (pytorch_ops.tsx).
 */
import { useMemo } from "preact/hooks";
import { DataTable, type Column, type Filter } from "../components/data_table";
import { NO_PARAMS } from "../location";
import { DiagnosticsPanel } from "./diagnostics";
import {
  bool,
  formatCount,
  formatFraction,
  formatUs,
  list,
  num,
  record,
  str,
} from "./format";
import { type Part, SharePie, sumBy } from "./share_pie";
import { PytorchOpTables } from "./pytorch_ops";
import { diagnosticsOf, type ViewDocument, type ViewProps } from "./types";
import { CsvLink, Section } from "./widgets";
import { type XlaFacts, xlaColumns, xlaFactsOf } from "./xla_columns";

const IDLE = "IDLE";
const IDLE_COLOR = "#cfd8dc";
const NO_TYPE = "(no type)";
const IDLE_NOTE =
  "IDLE is the time no op ran. Included, it is a row and a pie slice of each side and counts " +
  "in the shares.";

export interface OpRow extends XlaFacts {
  readonly rank: number | null;
  readonly side: string;
  readonly op_type: string;
  readonly op_name: string;
  readonly occurrences: number | null;
  readonly total_time_us: number | null;
  readonly avg_time_us: number | null;
  readonly total_self_time_us: number | null;
  readonly avg_self_time_us: number | null;
  readonly self_time_fraction: number | null;
  readonly cumulative_self_time_fraction: number | null;
  /** 0–1; null on host rows and on profiles without a GPU. */
  readonly tensor_core: number | null;
}

function opRowsOf(value: unknown): readonly OpRow[] {
  return list(value).map((item) => {
    const row = record(item);
    return {
      rank: num(row["rank"]),
      side: str(row["host_or_device"]),
      op_type: str(row["op_type"]),
      op_name: str(row["op_name"]),
      occurrences: num(row["occurrences"]),
      total_time_us: num(row["total_time_us"]),
      avg_time_us: num(row["avg_time_us"]),
      total_self_time_us: num(row["total_self_time_us"]),
      avg_self_time_us: num(row["avg_self_time_us"]),
      self_time_fraction: num(row["self_time_fraction"]),
      cumulative_self_time_fraction: num(row["cumulative_self_time_fraction"]),
      tensor_core: num(row["gpu_tensor_core_utilization"]),
      ...xlaFactsOf(row),
    };
  });
}

function us(key: keyof OpRow & `${string}_us`, label: string, title: string, width: string) {
  const column: Column<OpRow> = {
    key,
    label,
    title,
    value: (row) => row[key],
    render: (row) => formatUs(row[key]),
    numeric: true,
    width,
  };
  return column;
}

function fraction(
  key: "self_time_fraction" | "cumulative_self_time_fraction" | "tensor_core",
  label: string,
  title: string,
  width: string,
) {
  const column: Column<OpRow> = {
    key,
    label,
    title,
    value: (row) => row[key],
    render: (row) => formatFraction(row[key]),
    numeric: true,
    width,
  };
  return column;
}

const COLUMNS: readonly Column<OpRow>[] = [
  {
    key: "rank",
    label: "#",
    title: "Rank by self time on its side (device or host)",
    value: (row) => row.rank,
    render: (row) => formatCount(row.rank),
    numeric: true,
    width: "3em",
  },
  { key: "side", label: "Host/device", value: (row) => row.side, width: "6.5em" },
  { key: "op_type", label: "Type", value: (row) => row.op_type, ellipsis: true, width: "7.5em" },
  { key: "op_name", label: "Op name", value: (row) => row.op_name, ellipsis: true },
  {
    key: "occurrences",
    label: "Count",
    title: "Occurrences: how many times the op ran",
    value: (row) => row.occurrences,
    render: (row) => formatCount(row.occurrences),
    numeric: true,
    width: "5.5em",
  },
  us("total_time_us", "Total µs", "Total time (µs), nested ops included", "6.5em"),
  us("avg_time_us", "Avg µs", "Average time per occurrence (µs)", "5.5em"),
  us("total_self_time_us", "Self µs", "Total self time (µs): nested ops excluded", "6.5em"),
  us("avg_self_time_us", "Avg self µs", "Average self time per occurrence (µs)", "6.5em"),
  fraction("self_time_fraction", "Self %", "Share of the side's total self time", "4.5em"),
  fraction(
    "cumulative_self_time_fraction",
    "Cum. %",
    "Cumulative share of the side's self time, in rank order",
    "4.5em",
  ),
];

const TENSOR_CORE_COLUMN = fraction(
  "tensor_core",
  "TC %",
  "Tensor Core utilisation: share of the op's kernel time in kernels that use Tensor Cores",
  "4em",
);


const FILTERS: readonly Filter<OpRow>[] = [
  { key: "op_name", label: "Filter by op name", text: (row) => row.op_name },
];


function idleColored(parts: readonly Part[]): Part[] {
  return parts.map((part) => (part.name === IDLE ? { ...part, color: IDLE_COLOR } : part));
}

function selfUs(row: OpRow): number {
  return row.total_self_time_us ?? 0;
}

/** Self time per op and per op type for one side's rows. */
function SidePies({ rows, side }: { rows: readonly OpRow[]; side: "device" | "host" }) {
  const byOp = useMemo(
    () => idleColored(rows.map((row) => ({ name: row.op_name, value: selfUs(row) }))),
    [rows],
  );
  const byType = useMemo(
    () => idleColored(sumBy(rows, (row) => row.op_type || NO_TYPE, selfUs)),
    [rows],
  );
  const total = rows.reduce((sum, row) => sum + selfUs(row), 0);
  const label = side === "device" ? "Device" : "Host";
  return (
    <>
      <SharePie
        title={`${label} self time per op`}
        parts={byOp}
        total={total}
        unit="µs"
        testid={`pie-${side}-op`}
      />
      <SharePie
        title={`${label} self time per op type`}
        parts={byType}
        total={total}
        unit="µs"
        testid={`pie-${side}-type`}
      />
    </>
  );
}

export function TensorflowStats({ doc, run, view, host, params, onParams }: ViewProps) {
  const rows = useMemo(() => opRowsOf(doc["rows"]), [doc]);
  const deviceRows = useMemo(() => rows.filter((row) => row.side === "Device"), [rows]);
  const hostRows = useMemo(() => rows.filter((row) => row.side !== "Device"), [rows]);
  const hasTensorCore = rows.some((row) => row.tensor_core !== null);
  const columns = useMemo(() => {
    // XLA facts (HLO op, achieved rates) right after the op name, where the profile has them.
    const afterName = COLUMNS.findIndex((column) => column.key === "op_name") + 1;
    return [
      ...COLUMNS.slice(0, afterName),
      ...xlaColumns(rows),
      ...COLUMNS.slice(afterName),
      ...(hasTensorCore ? [TENSOR_CORE_COLUMN] : []),
    ];
  }, [rows, hasTensorCore]);
  const diagnostics = diagnosticsOf(doc);
  const panel = <DiagnosticsPanel diagnostics={diagnostics} />;
  const hostCount = num(doc["host_count"]);
  const docIncludesIdle = bool(doc["include_idle"]) ?? true;
  const wantsIdle = params["include_idle"] === "true" || params["include_idle"] === "1";
  const hasIdle = rows.some((row) => row.op_name === IDLE);
  const numDevice = num(doc["num_device_rows"]) ?? deviceRows.length;
  const numHost = num(doc["num_host_rows"]) ?? hostRows.length;

  return (
    <div
      class="analysis-view tensorflow-stats"
      data-testid="tfstats-view"
      data-include-idle={String(docIncludesIdle)}
      data-rows={String(rows.length)}
    >
      <div class="view-toolbar">
        <label
          class="toggle"
          title={IDLE_NOTE}
        >
          <input
            type="checkbox"
            data-testid="idle-toggle"
            checked={wantsIdle}
            onChange={(event) =>
              onParams(
                (event.currentTarget as HTMLInputElement).checked
                  ? { include_idle: "true" }
                  : NO_PARAMS,
              )
            }
          />
          Include IDLE
        </label>
        <span class="toolbar-note">
          <span data-testid="tfstats-num-device-rows">{numDevice}</span> device{" "}
          {numDevice === 1 ? "op" : "ops"},{" "}
          <span data-testid="tfstats-num-host-rows">{numHost}</span> host{" "}
          {numHost === 1 ? "op" : "ops"}
        </span>
        {hostCount !== null && hostCount > 1 ? (
          <span class="toolbar-note" data-testid="tfstats-hosts">
            summed over <span data-testid="tfstats-host-count">{hostCount}</span> hosts
          </span>
        ) : null}
      </div>

      <Section title="Self time" testid="tfstats-pies-section">
        {rows.length > 0 ? (
          <div class="pies" data-testid="tfstats-pies" data-pie-idle={String(hasIdle)}>
            {deviceRows.length > 0 ? <SidePies rows={deviceRows} side="device" /> : null}
            <SidePies rows={hostRows} side="host" />
          </div>
        ) : (
          <p class="hint">No op time to split into pies.</p>
        )}
      </Section>

      <Section
        title="Ops"
        testid="tfstats-table-section"
        aside={
          <CsvLink
            run={run}
            view={view}
            host={host}
            table="rows"
            testid="csv-link"
            params={docIncludesIdle ? NO_PARAMS : { include_idle: "false" }}
          />
        }
      >
        <DataTable
          rows={rows}
          columns={columns}
          testid="tfstats"
          rowTestid="tfstats-row"
          rowKey={(row, index) => `${index} ${row.side} ${row.op_name}`}
          rowAttributes={(row) => ({
            "data-op-name": row.op_name,
            "data-side": row.side,
            "data-rank": formatCount(row.rank),
          })}
          sortable
          filters={FILTERS}
          pageSize={100}
          empty={<span data-testid="tfstats-no-ops">{noOpsText(doc)}</span>}
        />
      </Section>

      <PytorchOpTables doc={doc} run={run} view={view} host={host} />

      {panel}
    </div>
  );
}

/** Why the table is empty: no event at all, or events none of which is an op. */
export function noOpsText(doc: ViewDocument): string {
  const events = num(doc["num_events"]);
  if (events === null || events === 0) return "No ops: the profile holds no events.";
  return (
    `No op events: this capture's ${formatCount(events)} events carry no TensorFlow or XLA ` +
    "op (none is an op execution with an op name), so there is no op time to split. " +
    "The trace viewer shows the events as recorded."
  );
}
