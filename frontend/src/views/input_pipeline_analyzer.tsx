/**
 * input_pipeline_analyzer: how much of each step waits for input, and which input ops cost.
 *
 * From the top: the verdict, figure cards (per-step input share avg ± stddev, min, max; the
 * input share of all step time; average step time), the stacked step-time chart, the host-side
 * input time split into its five kinds (chart and table, in ms), the input advice with its
 * evidence and what was not advised (advice.tsx), and the input-op table: host input ops and
 * the device's host-to-device copies, each row with its side and, for device rows, its share of
 * device op time (sortable, filterable by op name, downloadable as CSV). Diagnostics with errors or
 * warnings come first, otherwise last.
 *
 * Hooks: input-verdict (data-level), input-percent-{avg,stddev,min,max,total},
 * input-avg-step-ms, input-step-count, step-chart (data-steps), host-breakdown-<key>,
 * host-breakdown-chart, input-ops-table (+ -sort-<column>, -filter, -shown), input-op-row
 * (data-op-name) with input-op-row-<column> cells, input-ops-csv; input-advice (items
 * input-advice-item with their evidence, advice-withheld: advice.tsx).
 */
import { useMemo } from "preact/hooks";
import { Chart } from "../charts/chart";
import type { ChartOption } from "../charts/echarts";
import { dataIndexOf, tipElement } from "../charts/tooltip";
import { DataTable, type Column, type Filter } from "../components/data_table";
import { AdviceList, adviceOf, withheldOf } from "./advice";
import { DiagnosticsPanel } from "./diagnostics";
import {
  formatCount,
  formatMs,
  formatPercent,
  list,
  num,
  percentOf,
  record,
  str,
} from "./format";
import { StepChart } from "./step_chart";
import { bottleneckOf, statsOf, stepsOf } from "./step_time";
import { diagnosticsOf, type ViewProps } from "./types";
import { Card, CsvLink, Figure, NoSteps, Section, Verdict } from "./widgets";

/** The five kinds of host-side input time (`host_breakdown_us`), in display order. */
const HOST_KINDS = [
  { key: "enqueue", label: "Enqueue", color: "#1e88e5", note: "sending data to the device" },
  {
    key: "demanded_file_read",
    label: "Demanded file read",
    color: "#e53935",
    note: "reading files the step waited for",
  },
  {
    key: "advanced_file_read",
    label: "Advanced file read",
    color: "#fb8c00",
    note: "reading files ahead (prefetch, cache fill)",
  },
  {
    key: "preprocessing",
    label: "Preprocessing",
    color: "#43a047",
    note: "map, batch and other transformations",
  },
  {
    key: "unclassified",
    label: "Unclassified",
    color: "#9e9e9e",
    note: "input ops of no known kind",
  },
] as const;

interface InputOp {
  readonly op_name: string;
  readonly count: number | null;
  readonly time_ms: number | null;
  readonly time_percent: number | null;
  readonly self_time_ms: number | null;
  readonly self_time_percent: number | null;
  readonly category: string;
  /** "host" (host ops) or "device" (the device's host-to-device copies). */
  readonly side: string;
  /** Device rows: share of all device op time, as the overview's top device ops. */
  readonly device_time_percent: number | null;
}

function inputOpsOf(value: unknown): readonly InputOp[] {
  return list(value).map((item) => {
    const op = record(item);
    return {
      op_name: str(op["op_name"]),
      count: num(op["count"]),
      time_ms: num(op["time_ms"]),
      time_percent: num(op["time_percent"]),
      self_time_ms: num(op["self_time_ms"]),
      self_time_percent: num(op["self_time_percent"]),
      category: str(op["category"]),
      side: str(op["side"]) || "host",
      device_time_percent: num(op["device_time_percent"]),
    };
  });
}

const INPUT_OP_COLUMNS: readonly Column<InputOp>[] = [
  { key: "op_name", label: "Op name", value: (op) => op.op_name, ellipsis: true },
  { key: "category", label: "Category", value: (op) => op.category, ellipsis: true, width: "9em" },
  {
    key: "side",
    label: "Side",
    title: "host: a host op; device: a host-to-device copy on the device (input time)",
    value: (op) => op.side,
    width: "5em",
  },
  {
    key: "count",
    label: "Count",
    value: (op) => op.count,
    render: (op) => formatCount(op.count),
    numeric: true,
    width: "5.5em",
  },
  {
    key: "time_ms",
    label: "Time (ms)",
    title: "Time including nested input ops",
    value: (op) => op.time_ms,
    render: (op) => formatMs(op.time_ms),
    numeric: true,
    width: "7.5em",
  },
  {
    key: "time_percent",
    label: "Time %",
    value: (op) => op.time_percent,
    render: (op) => formatPercent(op.time_percent),
    numeric: true,
    width: "6em",
  },
  {
    key: "self_time_ms",
    label: "Self time (ms)",
    title: "Time excluding nested input ops",
    value: (op) => op.self_time_ms,
    render: (op) => formatMs(op.self_time_ms),
    numeric: true,
    width: "8.5em",
  },
  {
    key: "self_time_percent",
    label: "Self %",
    value: (op) => op.self_time_percent,
    render: (op) => formatPercent(op.self_time_percent),
    numeric: true,
    width: "6em",
  },
  {
    key: "device_time_percent",
    label: "Device %",
    title: "Share of all device op time (device rows), as in the overview's top device ops",
    value: (op) => op.device_time_percent,
    render: (op) => (op.device_time_percent === null ? "—" : formatPercent(op.device_time_percent)),
    numeric: true,
    width: "6.5em",
  },
];

const INPUT_OP_FILTERS: readonly Filter<InputOp>[] = [
  { key: "op_name", label: "Filter by op name", text: (op) => op.op_name },
];

function hostBreakdownOption(ms: readonly number[]): ChartOption {
  return {
    grid: { left: 8, right: 56, top: 8, bottom: 8, containLabel: true },
    tooltip: {
      trigger: "item",
      formatter: (params: unknown) => {
        const index = dataIndexOf(params);
        const kind = index === null ? undefined : HOST_KINDS[index];
        if (index === null || !kind) return "";
        return tipElement("div", "tbp-tip", `${kind.label}: ${formatMs(ms[index] ?? null)} ms`);
      },
    },
    xAxis: { type: "value" },
    yAxis: {
      type: "category",
      inverse: true,
      data: HOST_KINDS.map((kind) => kind.label),
      axisTick: { show: false },
    },
    series: [
      {
        type: "bar",
        barMaxWidth: 22,
        data: HOST_KINDS.map((kind, index) => ({
          value: ms[index] ?? 0,
          itemStyle: { color: kind.color },
        })),
        label: {
          show: true,
          position: "right",
          formatter: (p: { value?: unknown }) => formatMs(num(p.value)),
        },
      },
    ],
  };
}

function HostBreakdown({ breakdownUs }: { breakdownUs: Readonly<Record<string, unknown>> }) {
  const ms = useMemo(
    () =>
      HOST_KINDS.map((kind) => {
        const us = num(breakdownUs[kind.key]);
        return us === null ? null : us / 1000;
      }),
    [breakdownUs],
  );
  const total = ms.reduce<number>((sum, value) => sum + (value ?? 0), 0);
  const option = useMemo(() => hostBreakdownOption(ms.map((value) => value ?? 0)), [ms]);
  return (
    <div class="host-breakdown">
      {total > 0 ? (
        <Chart
          option={option}
          class="chart chart-host-breakdown"
          testid="host-breakdown-chart"
          label="Host-side input time by kind"
        />
      ) : (
        <p class="hint chart-host-breakdown-none" data-testid="host-breakdown-none">
          No host-side input time was recorded.
        </p>
      )}
      <table class="data-table host-breakdown-table" data-testid="host-breakdown-table">
        <thead>
          <tr>
            <th scope="col">Kind</th>
            <th scope="col" class="num">
              Time (ms)
            </th>
            <th scope="col" class="num">
              %
            </th>
          </tr>
        </thead>
        <tbody>
          {HOST_KINDS.map((kind, index) => {
            const value = ms[index] ?? null;
            return (
              <tr key={kind.key} class={value ? undefined : "zero"}>
                <td title={kind.note}>
                  <span
                    class="tbp-swatch"
                    style={{ backgroundColor: kind.color }}
                    aria-hidden="true"
                  />
                  {kind.label}
                </td>
                <td class="num" data-testid={`host-breakdown-${kind.key}`}>
                  {formatMs(value)}
                </td>
                <td class="num" data-testid={`host-breakdown-percent-${kind.key}`}>
                  {formatPercent(percentOf(value, total))}
                </td>
              </tr>
            );
          })}
        </tbody>
        <tfoot>
          <tr>
            <th scope="row">Total</th>
            <td class="num" data-testid="host-breakdown-total">
              {formatMs(total)}
            </td>
            <td />
          </tr>
        </tfoot>
      </table>
    </div>
  );
}

export function InputPipelineAnalyzer({ doc, run, view, host }: ViewProps) {
  const steps = useMemo(() => stepsOf(doc["steps"]), [doc]);
  const inputOps = useMemo(() => inputOpsOf(doc["input_ops"]), [doc]);
  const stepTime = statsOf(doc["step_time_ms"]);
  const inputPercent = statsOf(doc["input_percent"]);
  const bottleneck = bottleneckOf(doc["bottleneck"]);
  const diagnostics = diagnosticsOf(doc);
  const hasSteps = steps.length > 0;
  const panel = <DiagnosticsPanel diagnostics={diagnostics} />;
  const shown = (value: number | null, format: (v: number | null) => string) =>
    hasSteps ? format(value) : "—";

  return (
    <div class="analysis-view input-pipeline" data-testid="input-pipeline">
      <Verdict bottleneck={bottleneck} testid="input-verdict" />

      <div class="cards">
        <Card title="Input share per step" testid="card-input-percent">
          <p class="card-main">
            <Figure
              testid="input-percent-avg"
              value={shown(inputPercent.avg, formatPercent)}
              unit="%"
              big
            />
            {hasSteps ? (
              <span class="card-pm">
                ±{" "}
                <Figure
                  testid="input-percent-stddev"
                  value={shown(inputPercent.stddev, formatPercent)}
                  unit="%"
                />
              </span>
            ) : null}
          </p>
          <p class="card-sub">
            min{" "}
            <Figure
              testid="input-percent-min"
              value={shown(inputPercent.min, formatPercent)}
              unit="%"
            />
            , max{" "}
            <Figure
              testid="input-percent-max"
              value={shown(inputPercent.max, formatPercent)}
              unit="%"
            />
          </p>
        </Card>
        <Card title="Input share of all step time" testid="card-input-total">
          <p class="card-main">
            <Figure
              testid="input-percent-total"
              value={shown(num(doc["input_percent_total"]), formatPercent)}
              unit="%"
              big
            />
          </p>
          <p class="card-sub">total input time ÷ total step time</p>
        </Card>
        <Card title="Average step time" testid="card-input-step-time">
          <p class="card-main">
            <Figure
              testid="input-avg-step-ms"
              value={shown(stepTime.avg, formatMs)}
              unit="ms"
              big
            />
          </p>
          <p class="card-sub">
            over <Figure testid="input-step-count" value={String(steps.length)} />{" "}
            {steps.length === 1 ? "step" : "steps"}
          </p>
        </Card>
      </div>

      <Section title="Step time" testid="step-time-section">
        {hasSteps ? <StepChart steps={steps} /> : <NoSteps />}
      </Section>

      <Section title="Host-side input time by kind (ms)" testid="host-breakdown-section">
        <HostBreakdown breakdownUs={record(doc["host_breakdown_us"])} />
      </Section>

      <Section title="What to change in the input" testid="input-advice-section">
        <AdviceList
          advice={adviceOf(doc["advice"], [])}
          withheld={withheldOf(doc["advice_withheld"])}
          testid="input-advice"
          itemTestid="input-advice-item"
          empty="No input advice for this profile."
        />
      </Section>

      <Section
        title="Input ops"
        testid="input-ops-section"
        aside={
          <CsvLink run={run} view={view} host={host} table="input_ops" testid="input-ops-csv" />
        }
      >
        <DataTable
          rows={inputOps}
          columns={INPUT_OP_COLUMNS}
          testid="input-ops-table"
          rowTestid="input-op-row"
          rowKey={(op, index) => `${index} ${op.op_name}`}
          rowAttributes={(op) => ({ "data-op-name": op.op_name })}
          sortable
          filters={INPUT_OP_FILTERS}
          empty="No input ops: the profile holds no tf.data iterator, infeed or host-to-device copy events, on the host or the device."
        />
      </Section>

      {panel}
    </div>
  );
}
