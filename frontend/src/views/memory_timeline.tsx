/**
 * The memory timeline: stack, heap and free memory stacked over time, fragmentation on a
 * second axis; hover for a snapshot's details, drag the slider or wheel-zoom for a range.
 *
 * x is milliseconds from the profile's start, y the unit of the peak's size; each series
 * holds its value until the next snapshot (a step line), since memory changes only at
 * allocator events. Free memory often dwarfs what is in use (a CPU allocator's free is the
 * machine's memory): then the view starts with the Free series hidden, one legend click away. The tooltip is
 * built from DOM nodes with text (never HTML strings) and lists what the TensorFlow
 * profiler guide lists for a snapshot; the hovered snapshot is also reported through
 * `onHover`, for the details panel beside the chart. A zoom that settles (ZOOM_SETTLE_MS
 * without change) calls `onZoom` with its range, so the view can fetch every snapshot in
 * it (<Chart>'s `setup` listens to the ECharts event).
 *
 * PyTorch's allocator (`pytorch`): two lines as PyTorch draws them, Allocated (heap) and
 * Reserved (heap + free), and the tooltip in those terms.
 *
 * Hooks: `memory-timeline` (data-points, data-unit, data-series), the tooltip's
 * `.tbp-tip-memory`.
 */
import { useMemo, useRef } from "preact/hooks";
import { Chart, type ChartInstance } from "../charts/chart";
import type { ChartOption } from "../charts/echarts";
import { dataIndexOf, tipElement } from "../charts/tooltip";
import { formatMs, formatPercent } from "./format";
import { type ByteUnit, byteUnit, formatBytesIn, reservedBytes, type Snapshot } from "./memory_data";

const ZOOM_SETTLE_MS = 400;
export const SERIES_COLORS = {
  stack: "#8e44ad",
  heap: "#1f77b4",
  free: "#9ccc65",
  fragmentation: "#ef6c00",
  reserved: "#ff7f0e",
} as const;

/**
 * The snapshot's details in the profiler guide's order: [key, label, value text]; each size
 * in its own unit (byteUnit), 2 decimals.
 */
export function snapshotFields(
  snapshot: Snapshot,
  pytorch = false,
): readonly (readonly [string, string, string])[] {
  const size = (bytes: number | null) => {
    const own = byteUnit(bytes);
    return `${formatBytesIn(bytes, own)} ${own.name}`;
  };
  if (pytorch) {
    // PyTorch's terms: allocated and reserved; no stack, no fragmentation figure.
    return [
      ["event", "Event", snapshot.event || "—"],
      ["time", "Time", `${formatMs(snapshot.time_ms)} ms`],
      ["allocated", "Allocated", size(snapshot.heap_bytes)],
      ["reserved", "Reserved", size(reservedBytes(snapshot.heap_bytes, snapshot.free_bytes))],
      ["requested", "Size", size(snapshot.requested_bytes)],
      ["op", "Operator", snapshot.tf_op || "—"],
      ["step", "Step", snapshot.step === null ? "—" : String(snapshot.step)],
    ];
  }
  return [
    ["event", "Event", snapshot.event || "—"],
    ["time", "Time", `${formatMs(snapshot.time_ms)} ms`],
    ["stack", "Stack reserved", size(snapshot.stack_bytes)],
    ["heap", "Heap allocated", size(snapshot.heap_bytes)],
    ["free", "Free memory", size(snapshot.free_bytes)],
    ["fragmentation", "Fragmentation", `${formatPercent(snapshot.fragmentation_percent)} %`],
    ["requested", "Requested size", size(snapshot.requested_bytes)],
    ["allocation", "Allocation size", size(snapshot.allocation_bytes)],
    ["op", "TensorFlow op", snapshot.tf_op || "—"],
    ["step", "Step", snapshot.step === null ? "—" : String(snapshot.step)],
    ["region", "Region type", snapshot.region_type || "—"],
    ["data_type", "Data type", snapshot.data_type && snapshot.data_type !== "INVALID" ? snapshot.data_type : "—"],
    ["shape", "Shape", snapshot.tensor_shape || "—"],
  ];
}

/** The tooltip of one snapshot, from DOM nodes with text. */
export function snapshotTooltip(snapshot: Snapshot, pytorch = false): HTMLElement {
  const root = tipElement("div", "tbp-tip tbp-tip-memory");
  const table = tipElement("table", "tbp-tip-rows");
  for (const [key, label, value] of snapshotFields(snapshot, pytorch)) {
    const row = tipElement("tr", "tbp-tip-row");
    row.dataset["key"] = key;
    row.append(tipElement("td", "", label), tipElement("td", "num", value));
    table.appendChild(row);
  }
  root.appendChild(table);
  return root;
}

export interface MemoryTimelineProps {
  readonly points: readonly Snapshot[];
  readonly unit: ByteUnit;
  /** The x range drawn (ms): the document's timeline range. */
  readonly range: readonly [number, number] | null;
  /** Whether the Free series starts shown (the legend toggles it). */
  readonly showFree: boolean;
  /** PyTorch's allocator: Allocated and Reserved lines instead of stacked stack, heap, free. */
  readonly pytorch?: boolean;
  readonly onHover: (index: number) => void;
  readonly onZoom: (startMs: number, endMs: number) => void;
}

function timelineOption(
  points: readonly Snapshot[],
  unit: ByteUnit,
  range: readonly [number, number] | null,
  showFree: boolean,
  hover: (index: number) => void,
  pytorch = false,
): ChartOption {
  const series = (name: string, color: string, value: (s: Snapshot) => number | null,
                  area = true) => ({
    type: "line" as const,
    name,
    // PyTorch's reserved includes its allocated: two lines, not a stack.
    ...(pytorch ? {} : { stack: "memory" }),
    step: "end" as const,
    showSymbol: false,
    lineStyle: { width: area ? 1 : 2, color },
    itemStyle: { color },
    ...(area ? { areaStyle: { color, opacity: 0.35 } } : {}),
    data: points.map((s) => {
      const bytes = value(s);
      return [s.time_ms, bytes === null ? null : bytes / unit.bytes];
    }),
  });
  return {
    grid: { left: 16, right: 24, top: 48, bottom: 64, containLabel: true },
    legend: pytorch ? { top: 0 } : { top: 0, selected: { Free: showFree } },
    tooltip: {
      trigger: "axis",
      confine: true,
      formatter: (params: unknown) => {
        const index = dataIndexOf(params);
        const snapshot = index === null ? undefined : points[index];
        if (index === null || !snapshot) return "";
        hover(index);
        return snapshotTooltip(snapshot, pytorch);
      },
    },
    xAxis: {
      type: "value",
      name: "ms",
      nameLocation: "middle",
      nameGap: 26,
      min: range ? range[0] : "dataMin",
      max: range ? range[1] : "dataMax",
      // The range's ends are exact times: show them with 3 decimals like every ms figure.
      axisLabel: { formatter: (value: number) => String(Number(value.toFixed(3))) },
    },
    yAxis: pytorch ? [
      { type: "value", name: unit.name, nameTextStyle: { align: "right" } },
    ] : [
      { type: "value", name: unit.name, nameTextStyle: { align: "right" } },
      {
        type: "value",
        name: "fragmentation %",
        min: 0,
        max: 100,
        splitLine: { show: false },
      },
    ],
    dataZoom: [
      { type: "inside", filterMode: "none" },
      { type: "slider", filterMode: "none", height: 18, bottom: 8 },
    ],
    series: pytorch ? [
      series("Allocated", SERIES_COLORS.heap, (s) => s.heap_bytes),
      // A line over the Allocated area: where nothing is cached the two coincide.
      series("Reserved", SERIES_COLORS.reserved,
        (s) => reservedBytes(s.heap_bytes, s.free_bytes), false),
    ] : [
      series("Stack", SERIES_COLORS.stack, (s) => s.stack_bytes),
      series("Heap", SERIES_COLORS.heap, (s) => s.heap_bytes),
      series("Free", SERIES_COLORS.free, (s) => s.free_bytes),
      {
        type: "line",
        name: "Fragmentation %",
        yAxisIndex: 1,
        step: "end",
        showSymbol: false,
        lineStyle: { width: 1, color: SERIES_COLORS.fragmentation },
        itemStyle: { color: SERIES_COLORS.fragmentation },
        data: points.map((s) => [s.time_ms, s.fragmentation_percent]),
      },
    ],
  };
}

/** The zoom's x range (ms) as ECharts holds it, or null when it cannot be read. */
function zoomRange(chart: ChartInstance): [number, number] | null {
  const zooms = (chart.getOption() as { dataZoom?: unknown }).dataZoom;
  const first: unknown = Array.isArray(zooms) ? zooms[0] : null;
  if (first === null || typeof first !== "object") return null;
  const { startValue, endValue } = first as { startValue?: unknown; endValue?: unknown };
  return typeof startValue === "number" && typeof endValue === "number"
    ? [startValue, endValue]
    : null;
}

export function MemoryTimeline(props: MemoryTimelineProps) {
  const { points, unit, range, showFree, onHover, onZoom } = props;
  const pytorch = props.pytorch ?? false;
  const callbacks = useRef({ onHover, onZoom, range });
  callbacks.current = { onHover, onZoom, range };

  const option = useMemo(
    () =>
      timelineOption(points, unit, range, showFree, (index) => callbacks.current.onHover(index),
        pytorch),
    [points, unit, range, showFree, pytorch],
  );

  return (
    <Chart
      option={option}
      class="chart chart-memory"
      testid="memory-timeline"
      attributes={{
        "data-points": String(points.length),
        "data-unit": unit.name,
        "data-series": pytorch ? "Allocated,Reserved" : "Stack,Heap,Free,Fragmentation %",
      }}
      label={`Memory over time: ${points.length} snapshots, ${
        pytorch ? "allocated and reserved" : "stack, heap and free"}`}
      setup={(chart) => {
        let settle = 0;
        chart.on("datazoom", () => {
          window.clearTimeout(settle);
          settle = window.setTimeout(() => {
            const zoomed = zoomRange(chart);
            const drawn = callbacks.current.range;
            if (!zoomed || !drawn) return;
            const [start, end] = zoomed;
            // A zoom back out to the whole range is no new range.
            if (start <= drawn[0] && end >= drawn[1]) return;
            callbacks.current.onZoom(start, end);
          }, ZOOM_SETTLE_MS);
        });
        return () => window.clearTimeout(settle);
      }}
    />
  );
}
