/**
 * The overview's jitted functions table: per XLA module (jitted function), how often it ran
 * and for how long, from the document's `jitted_functions` (docs/api.md).
 *
 * Columns: the module (the steps' module is marked "steps"), calls (executions on the device
 * that ran it most), devices, mean/min/max execution time in ms (3 decimals), device time in
 * ms and its share of all XLA programs' device time, and the host's dispatch time per call
 * where the host shows it. Shown only when the profile ran XLA programs; a CSV link downloads
 * the same rows.
 *
 * Hooks: jitted-section, jitted-table, jitted-row (data-module, data-steps) with
 * jitted-row-<column> cells, jitted-csv.
 */
import { DataTable, type Column } from "../components/data_table";
import { formatCount, formatFraction, formatMs, list, num, record, str } from "./format";
import { CsvLink, Section } from "./widgets";

export interface JittedRow {
  readonly module: string;
  readonly calls: number | null;
  readonly devices: number | null;
  readonly executions: number | null;
  readonly mean_ms: number | null;
  readonly min_ms: number | null;
  readonly max_ms: number | null;
  readonly device_time_ms: number | null;
  readonly device_fraction: number | null;
  readonly dispatches: number | null;
  readonly dispatch_mean_ms: number | null;
}

export function jittedRowsOf(value: unknown): readonly JittedRow[] {
  return list(value).map((item) => {
    const row = record(item);
    return {
      module: str(row["module"]),
      calls: num(row["calls"]),
      devices: num(row["devices"]),
      executions: num(row["executions"]),
      mean_ms: num(row["mean_ms"]),
      min_ms: num(row["min_ms"]),
      max_ms: num(row["max_ms"]),
      device_time_ms: num(row["device_time_ms"]),
      device_fraction: num(row["device_fraction"]),
      dispatches: num(row["dispatches"]),
      dispatch_mean_ms: num(row["dispatch_mean_ms"]),
    };
  });
}

type MsKey = "mean_ms" | "min_ms" | "max_ms" | "device_time_ms" | "dispatch_mean_ms";
type CountKey = "calls" | "devices";

function ms(key: MsKey, label: string, title: string, width: string): Column<JittedRow> {
  return {
    key,
    label,
    title,
    value: (row) => row[key],
    render: (row) => formatMs(row[key]),
    numeric: true,
    width,
  };
}

function count(key: CountKey, label: string, title: string, width: string): Column<JittedRow> {
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

function columns(stepModule: string): readonly Column<JittedRow>[] {
  return [
    {
      key: "module",
      label: "Jitted function (XLA module)",
      value: (row) => row.module,
      render: (row) =>
        row.module === stepModule ? (
          <>
            {row.module} <span class="badge badge-yes">steps</span>
          </>
        ) : (
          row.module
        ),
      ellipsis: true,
    },
    count("calls", "Calls", "Executions on the device that ran it most", "4.5em"),
    count("devices", "Devices", "Devices that ran it", "5em"),
    ms("mean_ms", "Mean ms", "Mean execution time (ms), first start to last end", "6.5em"),
    ms("min_ms", "Min ms", "Shortest execution (ms)", "6em"),
    ms("max_ms", "Max ms", "Longest execution (ms)", "6em"),
    ms("device_time_ms", "Device ms", "Busy time summed over devices (ms)", "7em"),
    {
      key: "device_fraction",
      label: "Device %",
      title: "Share of all XLA programs' device time",
      value: (row) => row.device_fraction,
      render: (row) => formatFraction(row.device_fraction),
      numeric: true,
      width: "6em",
    },
    ms(
      "dispatch_mean_ms",
      "Dispatch ms",
      "Host time per call to dispatch it (PjitFunction), where the host shows it",
      "7em",
    ),
  ];
}

export function JittedFunctions({
  doc,
  run,
  view,
  host,
}: {
  doc: Readonly<Record<string, unknown>>;
  run: string;
  view: string;
  host: string;
}) {
  const rows = jittedRowsOf(doc["jitted_functions"]);
  if (rows.length === 0) return null;
  const stepModule = doc["step_rule"] === "executions" ? str(doc["step_module"]) : "";
  return (
    <Section
      title="Jitted functions"
      testid="jitted-section"
      aside={
        <CsvLink run={run} view={view} host={host} table="jitted_functions" testid="jitted-csv" />
      }
    >
      <DataTable
        rows={rows}
        columns={columns(stepModule)}
        testid="jitted-table"
        rowTestid="jitted-row"
        rowKey={(row) => row.module}
        rowAttributes={(row) => ({
          "data-module": row.module,
          "data-steps": String(row.module === stepModule),
        })}
        empty="No XLA program ran."
      />
    </Section>
  );
}
