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
import { dataIndexOf, tipElement } from "../charts/tooltip";
import { formatUs } from "./format";
import type { PodColumn, PodStep } from "./pod_model";
import { categoryBars } from "./step_chart";

export function podChartOption(
  columns: readonly PodColumn[],
  onHover: (index: number) => void,
): ChartOption {
  return {
    grid: { left: 16, right: 24, top: 64, bottom: 28, containLabel: true },
    ...categoryBars("worker", 56, (key) => columns.map((column) => column.breakdown_us[key])),
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      confine: true,
      formatter: (params: unknown) => {
        const index = dataIndexOf(params);
        const column = index === null ? undefined : columns[index];
        if (index === null || !column) return "";
        onHover(index);
        const text = `${column.label}: ${formatUs(column.step_time_us)} µs`;
        return tipElement("div", "tbp-tip", text);
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
