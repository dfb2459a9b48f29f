/**
 * The pod viewer's chart: one stacked column per worker for one step, split into the nine
 * categories (the colours and labels of step_time.ts, as in the step-time chart).
 *
 * `PodStepsChart` is the one-host form: one column per step, that host's own steps; hovering
 * a column picks that step (hook `pod-steps-chart`, with `data-step-nums` and
 * `data-step-times-us`).
 *
 * Hovering a column reports its index through `onHover` (from the tooltip formatter, which
 * ECharts calls with the column under the pointer); the tooltip itself is a short text line,
 * built as a DOM node, never HTML. The container carries `data-step` (the step number) and
 * `data-step-times-us` (each column's step time, 1 decimal, comma-separated) for tests.
 */
import { useMemo } from "preact/hooks";
import { Chart } from "../charts/chart";
import type { ChartOption } from "../charts/echarts";
import { dataIndexOf, tipElement } from "../charts/tooltip";
import { formatUs } from "./format";
import type { PodColumn, PodStep } from "./pod_model";
import { categoryBars } from "./step_chart";

export function podChartOption(
  columns: readonly PodColumn[],
  onHover: (index: number) => void,
): ChartOption {
  return columnsOption(columns.map((column) => column.label), columns, "worker", onHover);
}

/** Stacked category columns named `labels` along an axis called `axis`. */
function columnsOption(
  labels: readonly string[],
  columns: readonly PodColumn[],
  axis: string,
  onHover: (index: number) => void,
): ChartOption {
  return {
    grid: { left: 16, right: 24, top: 64, bottom: 28, containLabel: true },
    ...categoryBars(axis, 56, (key) => columns.map((column) => column.breakdown_us[key])),
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      confine: true,
      formatter: (params: unknown) => {
        const index = dataIndexOf(params);
        const column = index === null ? undefined : columns[index];
        if (index === null || !column) return "";
        onHover(index);
        const text = `${axis === "step" ? `step ${labels[index]}` : labels[index]}: ` +
          `${formatUs(column.step_time_us)} µs`;
        return tipElement("div", "tbp-tip", text);
      },
    },
    xAxis: {
      type: "category",
      name: axis,
      nameLocation: "middle",
      nameGap: 26,
      data: [...labels],
      axisLabel: { interval: axis === "step" ? "auto" : 0, hideOverlap: true },
    },
    yAxis: { type: "value", name: "µs", nameTextStyle: { align: "right" } },
  };
}

/** The stacked columns of one step (hook `pod-chart`). */
export function PodChart({ step, onHover }: { step: PodStep; onHover: (index: number) => void }) {
  const option = useMemo(() => podChartOption(step.columns, onHover), [step, onHover]);
  return (
    <Chart
      option={option}
      class="chart chart-pod"
      testid="pod-chart"
      attributes={{
        "data-step": String(step.step_num ?? ""),
        "data-step-times-us": step.columns.map((c) => formatUs(c.step_time_us)).join(","),
      }}
      label={`Step ${step.step_num ?? "?"}: ${step.columns.length} workers, split into categories`}
    />
  );
}

/** One host's every step as a column (hook `pod-steps-chart`); `onHover` gets the step index. */
export function PodStepsChart({ steps, onHover }: {
  steps: readonly PodStep[];
  onHover: (index: number) => void;
}) {
  const columns = useMemo(() => steps.flatMap((step) => step.columns.slice(0, 1)), [steps]);
  const labels = useMemo(() => steps.map((step) => String(step.step_num ?? "?")), [steps]);
  const option = useMemo(
    () => columnsOption(labels, columns, "step", onHover),
    [labels, columns, onHover],
  );
  return (
    <Chart
      option={option}
      class="chart chart-pod"
      testid="pod-steps-chart"
      attributes={{
        "data-step-nums": labels.join(","),
        "data-step-times-us": columns.map((c) => formatUs(c.step_time_us)).join(","),
      }}
      label={`${steps.length} steps of one host, split into categories`}
    />
  );
}
