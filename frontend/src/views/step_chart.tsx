/**
 * The step-time chart: one stacked column per step, split into the nine categories.
 *
 * x is the step number, y milliseconds; each category is a series with its fixed colour
 * (step_time.ts), stacked in the categories' order. The tooltip lists every category's
 * milliseconds for the step under the pointer; it is built from DOM nodes with text, never
 * from an HTML string. Past ZOOM_FROM_STEPS steps a slider and wheel zoom appear. The
 * container carries `data-steps`, the number of steps drawn, for tests.
 */
import { useMemo } from "preact/hooks";
import { Chart } from "../charts/chart";
import type { ChartOption } from "../charts/echarts";
import { dataIndexOf, tipElement } from "../charts/tooltip";
import { formatMs } from "./format";
import {
  CATEGORY_COLORS,
  CATEGORY_KEYS,
  CATEGORY_LABELS,
  type CategoryKey,
  type Step,
} from "./step_time";

const ZOOM_FROM_STEPS = 40;

/** The tooltip of one step: title line, then one row per category (top of the stack first). */
export function stepTooltip(step: Step): HTMLElement {
  const root = tipElement("div", "tbp-tip");
  root.appendChild(
    tipElement(
      "div",
      "tbp-tip-title",
      `Step ${step.step_num ?? "?"}: ${formatMs(step.step_time_ms)} ms`,
    ),
  );
  const table = tipElement("table", "tbp-tip-rows");
  for (const key of [...CATEGORY_KEYS].reverse()) {
    const ms = step.breakdown_ms[key];
    const row = tipElement("tr", ms > 0 ? "tbp-tip-row" : "tbp-tip-row tbp-tip-zero");
    const swatchCell = tipElement("td", "");
    const swatch = tipElement("span", "tbp-swatch");
    swatch.style.backgroundColor = CATEGORY_COLORS[key];
    swatchCell.appendChild(swatch);
    row.append(
      swatchCell,
      tipElement("td", "", CATEGORY_LABELS[key]),
      tipElement("td", "num", `${formatMs(ms)} ms`),
    );
    table.appendChild(row);
  }
  root.appendChild(table);
  return root;
}

/**
 * The legend and the stacked bars of the nine categories (or of `categories`), in their
 * fixed order, labels and colours: `values(key)` is a category's bar per x position. The
 * step-time, pod and compare charts draw their columns with these.
 */
export function categoryBars(
  stack: string,
  barMaxWidth: number,
  values: (key: CategoryKey) => number[],
  categories: readonly CategoryKey[] = CATEGORY_KEYS,
): Pick<ChartOption, "legend" | "series"> {
  return {
    legend: { top: 0, type: "scroll", data: categories.map((key) => CATEGORY_LABELS[key]) },
    series: categories.map((key) => ({
      type: "bar" as const,
      name: CATEGORY_LABELS[key],
      stack,
      barMaxWidth,
      itemStyle: { color: CATEGORY_COLORS[key] },
      data: values(key),
    })),
  };
}

/** The chart's ECharts option for these steps and categories. */
export function stepChartOption(
  steps: readonly Step[],
  categories: readonly CategoryKey[] = CATEGORY_KEYS,
): ChartOption {
  const zoom = steps.length > ZOOM_FROM_STEPS;
  return {
    grid: { left: 16, right: 24, top: 64, bottom: zoom ? 64 : 28, containLabel: true },
    ...categoryBars("step", 56, (key) => steps.map((step) => step.breakdown_ms[key]), categories),
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      confine: true,
      formatter: (params: unknown) => {
        const index = dataIndexOf(params);
        const step = index === null ? undefined : steps[index];
        return step ? stepTooltip(step) : "";
      },
    },
    xAxis: {
      type: "category",
      name: "step",
      nameLocation: "middle",
      nameGap: 26,
      data: steps.map((step) => String(step.step_num ?? "")),
    },
    yAxis: { type: "value", name: "ms", nameTextStyle: { align: "right" } },
    dataZoom: zoom ? [{ type: "inside" }, { type: "slider", height: 18, bottom: 8 }] : [],
  };
}

/** The stacked step-time chart (hook `step-chart`, with `data-steps`). */
export function StepChart({ steps }: { steps: readonly Step[] }) {
  const option = useMemo(() => stepChartOption(steps), [steps]);
  return (
    <Chart
      option={option}
      class="chart chart-steps"
      testid="step-chart"
      attributes={{ "data-steps": String(steps.length) }}
      label={`Step time of ${steps.length} steps, split into categories`}
    />
  );
}
