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
import { list, num, record, str } from "./format";
import { countColumn, fractionColumn, msColumn } from "./number_columns";
import { CsvLink, type DocSectionProps, Section } from "./widgets";

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
    countColumn("calls", "Calls", "Executions on the device that ran it most"),
    countColumn("devices", "Devices", "Devices that ran it"),
    msColumn("mean_ms", "Mean ms", "Mean execution time (ms), first start to last end"),
    msColumn("min_ms", "Min ms", "Shortest execution (ms)"),
    msColumn("max_ms", "Max ms", "Longest execution (ms)"),
    msColumn("device_time_ms", "Device ms", "Busy time summed over devices (ms)"),
    fractionColumn("device_fraction", "Device %", "Share of all XLA programs' device time"),
    msColumn(
      "dispatch_mean_ms",
      "Dispatch ms",
      "Host time per call to dispatch it (PjitFunction), where the host shows it",
    ),
  ];
}

export function JittedFunctions({ doc, run, view, host }: DocSectionProps) {
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
