/**
 * The Compare page: two runs side by side, from the `compare` route (docs/api.md).
 *
 * The page is the shell's "view" `compare` (COMPARE_VIEW): run A is the sidebar's run, host A
 * the selection's host, and run B / host B travel as the URL parameters `run_b` / `host_b`.
 * An empty host means "matched by name" (the server pairs hosts; two several-host runs are
 * compared over all hosts). Run B defaults to the newest run other than A.
 *
 * From the top: the pickers, the one-line conclusion, the two runs' step time and verdicts,
 * a side-by-side stacked chart of the average step (one column per run, the nine categories
 * stacked in their fixed colours), the per-category table (A, B, change in ms and %, shares)
 * and the ops whose self time per step changed most (each run's self time divided by its own
 * step count, or the whole capture's when a run has no steps: the document's op_basis; new and
 * vanished ops marked), a warning when the step counts differ more than twofold
 * (step_count_warning), then diagnostics.
 *
 * Hooks: compare-page, compare-run-a, compare-run-b, compare-host-a, compare-host-b (selects),
 * compare-conclusion, compare-side-a / compare-side-b with compare-{a,b}-{run,host,steps,
 * avg-step-ms,verdict}, compare-chart (data-a-ms, data-b-ms), compare-categories with
 * compare-category-row (data-category) and cells compare-category-row-<column>,
 * compare-step-row (the step-time row, same cells), compare-ops with compare-op-row
 * (data-op-name, data-change) and cells compare-op-row-<column>, compare-op-counts,
 * compare-op-basis (data-basis), compare-step-count-warning.
 */
import { useMemo } from "preact/hooks";
import { routeUrl } from "../api";
import { Chart } from "../charts/chart";
import type { ChartOption } from "../charts/echarts";
import { DataTable, type Column } from "../components/data_table";
import { ALL_HOSTS, hostLabel } from "../components/sidebar";
import { ErrorMessage, Loading, Notice } from "../components/states";
import { useJson, type Fetched } from "../hooks";
import type { ViewParams } from "../location";
import { DiagnosticsPanel } from "./diagnostics";
import { formatCount, formatMs, formatPercent, list, num, record, str } from "./format";
import { categoryBars } from "./step_chart";
import { bottleneckOf, type Bottleneck, breakdownOf, type CategoryKey } from "./step_time";
import { diagnosticsOf } from "./types";
import { Section, Verdict } from "./widgets";

export const COMPARE_VIEW = "compare";
const MINUS = "\u2212";

interface SideSummary {
  readonly run: string;
  readonly host: string;
  readonly num_steps: number | null;
  readonly avg_step_ms: number | null;
  readonly input_percent: number | null;
  readonly bottleneck: Bottleneck;
  readonly categories_ms: Readonly<Record<CategoryKey, number>>;
}

interface CategoryRow {
  readonly key: string;
  readonly label: string;
  readonly a_ms: number | null;
  readonly b_ms: number | null;
  readonly delta_ms: number | null;
  readonly delta_percent: number | null;
  readonly a_percent: number | null;
  readonly b_percent: number | null;
}

interface OpRow {
  readonly op_name: string;
  readonly op_type: string;
  readonly host_or_device: string;
  readonly change: string;
  readonly a_ms: number | null;
  readonly b_ms: number | null;
  readonly delta_ms: number | null;
  readonly ratio: number | null;
  readonly a_occurrences: number | null;
  readonly b_occurrences: number | null;
}

function sideOf(value: unknown): SideSummary {
  const side = record(value);
  return {
    run: str(side["run"]),
    host: str(side["host"]),
    num_steps: num(side["num_steps"]),
    avg_step_ms: num(record(side["step_time_ms"])["avg"]),
    input_percent: num(side["input_percent"]),
    bottleneck: bottleneckOf(side["bottleneck"]),
    categories_ms: breakdownOf(side["categories_ms"]),
  };
}

function categoriesOf(value: unknown): readonly CategoryRow[] {
  return list(value).map((item) => {
    const row = record(item);
    return {
      key: str(row["category"]),
      label: str(row["label"]),
      a_ms: num(row["a_ms"]),
      b_ms: num(row["b_ms"]),
      delta_ms: num(row["delta_ms"]),
      delta_percent: num(row["delta_percent"]),
      a_percent: num(row["a_percent"]),
      b_percent: num(row["b_percent"]),
    };
  });
}

function opsOf(value: unknown): readonly OpRow[] {
  return list(value).map((item) => {
    const op = record(item);
    return {
      op_name: str(op["op_name"]),
      op_type: str(op["op_type"]),
      host_or_device: str(op["host_or_device"]),
      change: str(op["change"]),
      a_ms: num(op["a_ms"]),
      b_ms: num(op["b_ms"]),
      delta_ms: num(op["delta_ms"]),
      ratio: num(op["ratio"]),
      a_occurrences: num(op["a_occurrences"]),
      b_occurrences: num(op["b_occurrences"]),
    };
  });
}

/** A signed change with a real minus sign: "−38.008", "+0.424", " 0.000". */
export function formatSigned(value: number | null, digits: number): string {
  if (value === null) return "—";
  const text = Math.abs(value).toFixed(digits);
  return value > 0 ? `+${text}` : value < 0 ? `${MINUS}${text}` : text;
}

function changeClass(value: number | null): string {
  return value === null || value === 0 ? "" : value < 0 ? "change-down" : "change-up";
}

const CATEGORY_COLUMNS: readonly Column<CategoryRow>[] = [
  { key: "label", label: "Category", value: (r) => r.label },
  { key: "a_ms", label: "A ms", value: (r) => r.a_ms, render: (r) => formatMs(r.a_ms), numeric: true },
  { key: "b_ms", label: "B ms", value: (r) => r.b_ms, render: (r) => formatMs(r.b_ms), numeric: true },
  {
    key: "delta_ms",
    label: "Change ms",
    value: (r) => r.delta_ms,
    render: (r) => <span class={changeClass(r.delta_ms)}>{formatSigned(r.delta_ms, 3)}</span>,
    numeric: true,
  },
  {
    key: "delta_percent",
    label: "Change %",
    value: (r) => r.delta_percent,
    render: (r) => (r.delta_percent === null ? "n/a" : formatSigned(r.delta_percent, 1)),
    numeric: true,
    title: "relative change of the category's average (n/a when A has none)",
  },
  {
    key: "a_percent",
    label: "A % of step",
    value: (r) => r.a_percent,
    render: (r) => formatPercent(r.a_percent),
    numeric: true,
  },
  {
    key: "b_percent",
    label: "B % of step",
    value: (r) => r.b_percent,
    render: (r) => formatPercent(r.b_percent),
    numeric: true,
  },
];

/** The op table's columns; `perStep`: a_ms / b_ms are self time per step (op_basis). */
function opColumns(perStep: boolean): readonly Column<OpRow>[] {
  const unit = perStep ? "ms/step" : "ms";
  return [
  { key: "op_name", label: "Op name", value: (r) => r.op_name, ellipsis: true },
  { key: "op_type", label: "Type", value: (r) => r.op_type, ellipsis: true, width: "9em" },
  { key: "host_or_device", label: "On", value: (r) => r.host_or_device, width: "4.5em" },
  { key: "a_ms", label: `A self ${unit}`, value: (r) => r.a_ms, render: (r) => formatMs(r.a_ms), numeric: true, width: "7em" },
  { key: "b_ms", label: `B self ${unit}`, value: (r) => r.b_ms, render: (r) => formatMs(r.b_ms), numeric: true, width: "7em" },
  {
    key: "delta_ms",
    label: `Change ${unit}`,
    value: (r) => r.delta_ms,
    render: (r) => <span class={changeClass(r.delta_ms)}>{formatSigned(r.delta_ms, 3)}</span>,
    numeric: true,
    width: "7.5em",
  },
  {
    key: "ratio",
    label: "B / A",
    value: (r) => r.ratio,
    render: (r) =>
      r.ratio === null ? <span class={`op-change op-${r.change}`}>{r.change}</span> : `×${r.ratio.toFixed(2)}`,
    numeric: true,
    width: "6em",
  },
  {
    key: "occurrences",
    label: "Count A → B",
    value: (r) => r.b_occurrences,
    render: (r) => `${formatCount(r.a_occurrences)} → ${formatCount(r.b_occurrences)}`,
    numeric: true,
    width: "8em",
  },
  ];
}

/** One stacked column per run: the average step split into the nine categories. */
export function compareChartOption(a: SideSummary, b: SideSummary): ChartOption {
  return {
    grid: { left: 16, right: 24, top: 64, bottom: 28, containLabel: true },
    ...categoryBars("step", 96, (key) => [a.categories_ms[key], b.categories_ms[key]]),
    tooltip: { trigger: "item", confine: true },
    xAxis: { type: "category", data: [`A: ${a.run}`, `B: ${b.run}`] },
    yAxis: { type: "value", name: "ms per step", nameTextStyle: { align: "left" } },
  };
}

function SideCard({ side, label }: { side: SideSummary; label: "a" | "b" }) {
  const id = `compare-${label}`;
  return (
    <section class="card compare-side" data-testid={`compare-side-${label}`}>
      <h3 class="card-title">
        {label.toUpperCase()}: <span data-testid={`${id}-run`}>{side.run}</span>
      </h3>
      <p>
        Host <span data-testid={`${id}-host`}>{side.host === ALL_HOSTS ? "all hosts" : side.host}</span>
        {" · "}
        <span data-testid={`${id}-steps`}>{formatCount(side.num_steps)}</span> steps
      </p>
      <p class="figure figure-big">
        <span class="figure-value" data-testid={`${id}-avg-step-ms`}>
          {formatMs(side.avg_step_ms)}
        </span>
        <span class="figure-unit"> ms per step</span>
      </p>
      <Verdict bottleneck={side.bottleneck} testid={`${id}-verdict`} />
    </section>
  );
}

interface PickerProps {
  readonly label: string;
  readonly testid: string;
  readonly options: readonly string[];
  readonly value: string;
  readonly empty?: string;
  readonly onChange: (value: string) => void;
}

function Picker({ label, testid, options, value, empty, onChange }: PickerProps) {
  const values = options.includes(value) || value === "" ? options : [value, ...options];
  return (
    <label class="compare-picker">
      <span>{label}</span>
      <select
        data-testid={testid}
        value={value}
        onChange={(event) => onChange((event.currentTarget as HTMLSelectElement).value)}
      >
        {empty !== undefined ? <option value="">{empty}</option> : null}
        {values.map((item) => (
          <option value={item} key={item} title={item}>
            {hostLabel(item)}
          </option>
        ))}
      </select>
    </label>
  );
}

function hostList(fetched: Fetched<readonly string[]>): readonly string[] {
  return fetched.state === "ok" && Array.isArray(fetched.data) ? fetched.data : [];
}

export interface CompareSelection {
  readonly runA: string | null;
  readonly hostA: string | null;
  readonly runB: string | null;
  readonly hostB: string | null;
}

/** The comparison the URL asks for: run A, host A, and `run_b`/`host_b` from the params. */
export function compareSelection(
  run: string | null,
  host: string | null,
  params: ViewParams,
): CompareSelection {
  return { runA: run, hostA: host, runB: params["run_b"] ?? null, hostB: params["host_b"] ?? null };
}

export interface ComparePageProps {
  readonly runs: Fetched<readonly string[]>;
  readonly selection: CompareSelection;
  readonly onSelect: (next: CompareSelection) => void;
}

export function ComparePage({ runs, selection, onSelect }: ComparePageProps) {
  const runList = runs.state === "ok" ? runs.data : [];
  const runA = selection.runA ?? runList[0] ?? null;
  const runB = selection.runB ?? runList.find((r) => r !== runA) ?? runA;
  const hostA = selection.hostA ?? "";
  const hostB = selection.hostB ?? "";
  const hostsA = useJson<readonly string[]>(
    runA !== null ? routeUrl("hosts", { run: runA, tag: "overview_page" }) : null,
  );
  const hostsB = useJson<readonly string[]>(
    runB !== null ? routeUrl("hosts", { run: runB, tag: "overview_page" }) : null,
  );
  const query: Record<string, string> = {};
  if (runA !== null && runB !== null) {
    query["run_a"] = runA;
    query["run_b"] = runB;
    if (hostA) query["host_a"] = hostA;
    if (hostB) query["host_b"] = hostB;
  }
  const doc = useJson<Record<string, unknown>>(
    runA !== null && runB !== null ? routeUrl("compare", query) : null,
  );
  const set = (change: Partial<CompareSelection>): void =>
    onSelect({ runA, hostA: hostA || null, runB, hostB: hostB || null, ...change });

  return (
    <article class="view compare" data-testid="compare-page">
      <header class="view-header">
        <h2>Compare runs</h2>
      </header>
      <div class="compare-pickers">
        <Picker label="Run A (before)" testid="compare-run-a" options={runList} value={runA ?? ""}
          onChange={(value) => set({ runA: value, hostA: null })} />
        <Picker label="Host A" testid="compare-host-a" options={hostList(hostsA)} value={hostA}
          empty="matched by name" onChange={(value) => set({ hostA: value || null })} />
        <Picker label="Run B (after)" testid="compare-run-b" options={runList} value={runB ?? ""}
          onChange={(value) => set({ runB: value, hostB: null })} />
        <Picker label="Host B" testid="compare-host-b" options={hostList(hostsB)} value={hostB}
          empty="matched by name" onChange={(value) => set({ hostB: value || null })} />
      </div>
      <CompareBody runs={runs} doc={doc} />
    </article>
  );
}

function CompareBody({
  runs,
  doc,
}: {
  runs: Fetched<readonly string[]>;
  doc: Fetched<Record<string, unknown>>;
}) {
  if (runs.state === "error") return <ErrorMessage title="Could not list runs" message={runs.error} />;
  if (runs.state === "ok" && runs.data.length === 0)
    return <Notice testid="compare-no-runs">There are no runs to compare.</Notice>;
  if (doc.state === "error")
    return <ErrorMessage title="Could not compare these runs" message={doc.error} />;
  if (doc.state !== "ok") return <Loading what="the comparison" />;
  return <CompareResult doc={doc.data} />;
}

function CompareResult({ doc }: { doc: Record<string, unknown> }) {
  const a = useMemo(() => sideOf(doc["a"]), [doc]);
  const b = useMemo(() => sideOf(doc["b"]), [doc]);
  const categories = useMemo(() => categoriesOf(doc["categories"]), [doc]);
  const ops = useMemo(() => opsOf(doc["ops"]), [doc]);
  const option = useMemo(() => compareChartOption(a, b), [a, b]);
  const step = record(doc["step_time_ms"]);
  const stepRow: CategoryRow = {
    key: "step_time",
    label: "Step time",
    a_ms: num(step["a"]),
    b_ms: num(step["b"]),
    delta_ms: num(step["delta"]),
    delta_percent: num(step["delta_percent"]),
    a_percent: a.avg_step_ms === null ? null : 100,
    b_percent: b.avg_step_ms === null ? null : 100,
  };
  const mostChanged = str(doc["most_changed_category"]);
  const perStep = str(doc["op_basis"]) !== "whole_capture";
  const opCols = useMemo(() => opColumns(perStep), [perStep]);
  const stepWarning = str(doc["step_count_warning"]);
  return (
    <>
      <p class="compare-conclusion" data-testid="compare-conclusion">
        {str(doc["conclusion"])}
      </p>
      <div class="compare-sides">
        <SideCard side={a} label="a" />
        <SideCard side={b} label="b" />
      </div>
      {stepWarning ? (
        <p class="compare-warning" role="note" data-testid="compare-step-count-warning">
          {stepWarning}
        </p>
      ) : null}
      <Section title="Average step, side by side" testid="compare-chart-panel">
        <Chart
          option={option}
          class="chart chart-compare"
          testid="compare-chart"
          attributes={{
            "data-a-ms": String(a.avg_step_ms ?? ""),
            "data-b-ms": String(b.avg_step_ms ?? ""),
          }}
          label={`Average step of A (${formatMs(a.avg_step_ms)} ms) and B (${formatMs(b.avg_step_ms)} ms), split into categories`}
        />
      </Section>
      <Section title="Step time and its categories (average per step)" testid="compare-categories-panel">
        {/* One table, one header: the step time row first, then its categories. */}
        <DataTable
          rows={[stepRow, ...categories]}
          columns={CATEGORY_COLUMNS}
          testid="compare-categories"
          rowTestid={(row) => (row === stepRow ? "compare-step-row" : "compare-category-row")}
          rowAttributes={(row) =>
            row === stepRow
              ? { class: "compare-step-total" }
              : {
                  "data-category": row.key,
                  ...(row.key === mostChanged ? { "data-most-changed": "true" } : {}),
                }
          }
          rowKey={(row) => row.key}
          empty="No categories."
        />
      </Section>
      <Section
        title={perStep ? "Ops whose self time per step changed most" : "Ops whose self time changed most (whole capture)"}
        testid="compare-ops-panel"
      >
        <p class="hint" data-testid="compare-op-basis" data-basis={perStep ? "per_step" : "whole_capture"}>
          {perStep
            ? `Per step: each op's self time over the capture divided by its run's step count (A: ${formatCount(a.num_steps)} steps, B: ${formatCount(b.num_steps)} steps).`
            : "Whole capture: a run has no steps, so each op's self time is summed over its whole capture."}
        </p>
        <DataTable
          rows={ops}
          columns={opCols}
          testid="compare-ops"
          rowTestid="compare-op-row"
          rowAttributes={(row) => ({ "data-op-name": row.op_name, "data-change": row.change })}
          rowKey={(row) => `${row.host_or_device} ${row.op_name}`}
          sortable
          empty="No ops in either run."
        />
        <p class="hint" data-testid="compare-op-counts">
          {formatCount(num(doc["num_changed_ops"]))} ops in both runs,{" "}
          {formatCount(num(doc["num_new_ops"]))} new in B,{" "}
          {formatCount(num(doc["num_vanished_ops"]))} vanished from A.
        </p>
      </Section>
      <DiagnosticsPanel diagnostics={diagnosticsOf(doc)} />
    </>
  );
}

/** The shell's selection for a comparison (run B and host B as URL parameters). */
export function compareToSelection(next: CompareSelection): {
  run: string | null;
  view: string;
  host: string | null;
  params: ViewParams;
} {
  const params: Record<string, string> = {};
  if (next.runB !== null) params["run_b"] = next.runB;
  if (next.hostB !== null) params["host_b"] = next.hostB;
  return { run: next.runA, view: COMPARE_VIEW, host: next.hostA, params };
}
