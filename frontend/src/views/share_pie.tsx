/**
 * <SharePie>: how a total splits among its largest parts, as a doughnut and a legend.
 *
 * `topSlices` keeps the MAX_SLICES largest parts and sums the rest into one "Other" slice
 * (when two or more parts are left over; a single leftover keeps its own name). Parts of
 * zero or less are left out. The doughnut has no labels on the canvas (names are long); the
 * legend beside it lists every slice with its share of `total` as text, and the tooltip is
 * built from DOM nodes with `textContent`, so names from profiles are never parsed as HTML.
 *
 * Hooks: `<testid>` (the figure, with `data-slices`, the number of slices drawn),
 * `<testid>-chart`, `<testid>-empty` (instead of the chart when there is nothing to draw);
 * per legend entry `pie-slice` (with `data-name`, and `data-other` on the Other slice) and
 * its `pie-slice-percent` (share of `total`, 1 decimal).
 */
import { useMemo } from "preact/hooks";
import { Chart } from "../charts/chart";
import { MiddleText } from "../components/middle_text";
import type { ChartOption } from "../charts/echarts";
import { dataIndexOf, tipElement } from "../charts/tooltip";
import { formatPercent, formatUs, percentOf } from "./format";

/** How many of the largest parts a pie names; the rest are one "Other" slice. */
export const MAX_SLICES = 10;
export const OTHER = "Other";

export interface Part {
  readonly name: string;
  readonly value: number;
  /** A fixed colour for this part (e.g. IDLE); else it takes the palette's next one. */
  readonly color?: string;
}

export interface Slice extends Part {
  readonly color: string;
  /** The Other slice: the sum of `count` parts. */
  readonly other: boolean;
  readonly count: number;
}

const PALETTE = [
  "#1e88e5",
  "#e53935",
  "#43a047",
  "#fb8c00",
  "#8e24aa",
  "#00acc1",
  "#fdd835",
  "#6d4c41",
  "#d81b60",
  "#3949ab",
] as const;
const OTHER_COLOR = "#9e9e9e";

/** The slices of `parts`: the MAX_SLICES largest (ties keep their order), then Other. */
export function topSlices(parts: readonly Part[], limit = MAX_SLICES): readonly Slice[] {
  const positive = parts
    .map((part, index) => ({ part, index }))
    .filter(({ part }) => part.value > 0)
    .sort((a, b) => b.part.value - a.part.value || a.index - b.index)
    .map(({ part }) => part);
  const named = positive.length > limit + 1 ? positive.slice(0, limit) : positive;
  const rest = positive.slice(named.length);
  let next = 0;
  const slices: Slice[] = named.map((part) => ({
    name: part.name,
    value: part.value,
    color: part.color ?? PALETTE[next++ % PALETTE.length] ?? OTHER_COLOR,
    other: false,
    count: 1,
  }));
  if (rest.length > 0)
    slices.push({
      name: OTHER,
      value: rest.reduce((sum, part) => sum + part.value, 0),
      color: OTHER_COLOR,
      other: true,
      count: rest.length,
    });
  return slices;
}

/** Sums `value` per `key` over `items`, in order of first appearance. */
export function sumBy<T>(
  items: readonly T[],
  key: (item: T) => string,
  value: (item: T) => number,
): Part[] {
  const sums = new Map<string, number>();
  for (const item of items) {
    const name = key(item);
    sums.set(name, (sums.get(name) ?? 0) + value(item));
  }
  return [...sums].map(([name, total]) => ({ name, value: total }));
}

function sliceLabel(slice: Slice): string {
  return slice.other ? `${OTHER} (${slice.count} more)` : slice.name;
}

/** The tooltip of one slice: its name, then its value and share. */
export function sliceTooltip(slice: Slice, total: number, unit: string): HTMLElement {
  const root = tipElement("div", "tbp-tip tbp-tip-pie");
  root.appendChild(tipElement("div", "tbp-tip-title", sliceLabel(slice)));
  root.appendChild(
    tipElement(
      "div",
      "tbp-tip-line",
      `${formatUs(slice.value)} ${unit} · ${formatPercent(percentOf(slice.value, total))}%`,
    ),
  );
  return root;
}

function pieOption(slices: readonly Slice[], total: number, unit: string): ChartOption {
  return {
    tooltip: {
      trigger: "item",
      confine: true,
      formatter: (params: unknown) => {
        const index = dataIndexOf(params);
        const slice = index === null ? undefined : slices[index];
        return slice ? sliceTooltip(slice, total, unit) : "";
      },
    },
    series: [
      {
        type: "pie",
        radius: ["40%", "78%"],
        center: ["50%", "50%"],
        startAngle: 90,
        clockwise: true,
        label: { show: false },
        labelLine: { show: false },
        emphasis: { scale: true, scaleSize: 4 },
        itemStyle: { borderColor: "#fff", borderWidth: 1 },
        // No `name`: nothing of ECharts ever renders a profile's text.
        data: slices.map((slice) => ({ value: slice.value, itemStyle: { color: slice.color } })),
      },
    ],
  };
}

export interface SharePieProps {
  readonly title: string;
  readonly parts: readonly Part[];
  /** What the shares are of (may exceed the sum of `parts`). */
  readonly total: number;
  /** Unit of the values, e.g. "µs". */
  readonly unit: string;
  readonly testid: string;
}

export function SharePie({ title, parts, total, unit, testid }: SharePieProps) {
  const slices = useMemo(() => topSlices(parts), [parts]);
  const option = useMemo(() => pieOption(slices, total, unit), [slices, total, unit]);
  return (
    <figure class="pie" data-testid={testid} data-slices={String(slices.length)}>
      <figcaption class="pie-title">{title}</figcaption>
      {slices.length > 0 ? (
        <div class="pie-body">
          <Chart
            option={option}
            class="chart chart-pie"
            testid={`${testid}-chart`}
            label={`${title}: ${slices.length} slices`}
          />
          <ol class="pie-legend">
            {slices.map((slice, index) => (
              <li
                key={index}
                class="pie-slice"
                data-testid="pie-slice"
                data-name={slice.other ? OTHER : slice.name}
                data-other={slice.other ? "true" : undefined}
                title={sliceLabel(slice)}
              >
                <span
                  class="tbp-swatch"
                  style={{ backgroundColor: slice.color }}
                  aria-hidden="true"
                />
                <MiddleText class="pie-slice-name" text={sliceLabel(slice)} />
                <span class="pie-slice-figures">
                  <span class="pie-slice-percent" data-testid="pie-slice-percent">
                    {formatPercent(percentOf(slice.value, total))}
                  </span>
                  %
                </span>
              </li>
            ))}
          </ol>
        </div>
      ) : (
        <p class="hint pie-empty" data-testid={`${testid}-empty`}>
          Nothing to show: no time was recorded.
        </p>
      )}
    </figure>
  );
}
