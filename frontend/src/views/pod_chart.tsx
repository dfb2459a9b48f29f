/**
 * The pod viewer's chart: one stacked column per worker for one step, split into the nine
 * categories (the colours and labels of step_time.ts, as in the step-time chart).
 *
 * Hovering a column reports its index through `onHover` (from the tooltip formatter, which
 * ECharts calls with the column under the pointer); the tooltip itself is a short text line,
 * built as a DOM node, never HTML. The container carries `data-step` (the step number) and
 * `data-step-times-us` (each column's step time, 1 decimal, comma-separated) for tests.
 */
import { useMemo } from "preact/hooks";
import { Chart } from "../charts/chart";
import type { ChartOption } from "../charts/echarts";
import { formatUs } from "./format";
import type { PodColumn, PodStep } from "./pod_model";
import { CATEGORY_COLORS, CATEGORY_KEYS, CATEGORY_LABELS } from "./step_time";

function dataIndexOf(params: unknown): number | null {
  const first: unknown = Array.isArray(params) ? params[0] : params;
  if (first === null || typeof first !== "object") return null;
  const index = (first as { dataIndex?: unknown }).dataIndex;
  return typeof index === "number" ? index : null;
}

function tipOf(column: PodColumn): HTMLElement {
  const node = document.createElement("div");
  node.className = "tbp-tip";
  node.textContent = `${column.label}: ${formatUs(column.step_time_us)} µs`;
  return node;
}

export function podChartOption(
  columns: readonly PodColumn[],
  onHover: (index: number) => void,
): ChartOption {
  return {
    grid: { left: 16, right: 24, top: 64, bottom: 28, containLabel: true },
    legend: { top: 0, type: "scroll", data: CATEGORY_KEYS.map((key) => CATEGORY_LABELS[key]) },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      confine: true,
      formatter: (params: unknown) => {
        const index = dataIndexOf(params);
        const column = index === null ? undefined : columns[index];
        if (index === null || !column) return "";
        onHover(index);
        return tipOf(column);
      },
    },
    xAxis: {
      type: "category",
      name: "worker",
      nameLocation: "middle",
      nameGap: 26,
      data: columns.map((column) => column.label),
      axisLabel: { interval: 0, hideOverlap: true },
    },
    yAxis: { type: "value", name: "µs", nameTextStyle: { align: "right" } },
    series: CATEGORY_KEYS.map((key) => ({
      type: "bar" as const,
      name: CATEGORY_LABELS[key],
      stack: "worker",
      barMaxWidth: 56,
      itemStyle: { color: CATEGORY_COLORS[key] },
      data: columns.map((column) => column.breakdown_us[key]),
    })),
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
