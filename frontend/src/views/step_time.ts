/**
 * The step-time model the overview and the input pipeline views share (docs/api.md).
 *
 * A step is `{step_num, step_time_ms, breakdown_ms}`, where `breakdown_ms` splits the step
 * into the nine categories below (they sum to the step time). The categories have one fixed
 * order, label and colour everywhere: in charts, tables and tooltips.
 */
import { list, num, record, str } from "./format";

export const CATEGORY_KEYS = [
  "device_compute",
  "device_to_device",
  "device_collectives",
  "host_compute",
  "kernel_launch",
  "input",
  "output",
  "compilation",
  "all_others",
] as const;

export type CategoryKey = (typeof CATEGORY_KEYS)[number];

export const CATEGORY_LABELS: Readonly<Record<CategoryKey, string>> = {
  device_compute: "Device compute",
  device_to_device: "Device to device",
  device_collectives: "Device collectives",
  host_compute: "Host compute",
  kernel_launch: "Kernel launch",
  input: "Input",
  output: "Output",
  compilation: "Compilation",
  all_others: "All others",
};

/** One colour per category, the same in every chart (input is the red one). */
export const CATEGORY_COLORS: Readonly<Record<CategoryKey, string>> = {
  device_compute: "#1e88e5",
  device_to_device: "#00acc1",
  device_collectives: "#8e24aa",
  host_compute: "#43a047",
  kernel_launch: "#fdd835",
  input: "#e53935",
  output: "#fb8c00",
  compilation: "#6d4c41",
  all_others: "#9e9e9e",
};

export interface Step {
  readonly step_num: number | null;
  readonly step_time_ms: number | null;
  /** Milliseconds per category; a category the server left out reads 0. */
  readonly breakdown_ms: Readonly<Record<CategoryKey, number>>;
}

export interface Stats {
  readonly avg: number | null;
  readonly stddev: number | null;
  readonly min: number | null;
  readonly max: number | null;
}

export const INPUT_BOUND_LEVELS = [
  "highly",
  "moderately",
  "potentially",
  "not",
  "unknown",
] as const;

export type InputBound = (typeof INPUT_BOUND_LEVELS)[number];

export interface Bottleneck {
  /** The reference's level (what `data-level` shows). */
  readonly input_bound: InputBound;
  /** The level the page states: never input-bound where the profile shows no input pipeline. */
  readonly stated_level: InputBound;
  readonly statement: string;
  /** What bounds the step, e.g. "Bounded by device compute (93.6 %)"; "" without steps. */
  readonly headline: string;
  readonly bound_by: string;
}

/** A breakdown object with all nine categories; a category it lacks reads 0. */
export function breakdownOf(value: unknown): Record<CategoryKey, number> {
  const breakdown = record(value);
  return Object.fromEntries(
    CATEGORY_KEYS.map((key) => [key, num(breakdown[key]) ?? 0]),
  ) as Record<CategoryKey, number>;
}

/** The document's `steps`, each with all nine categories. */
export function stepsOf(value: unknown): readonly Step[] {
  return list(value).map((item) => {
    const step = record(item);
    return {
      step_num: num(step["step_num"]),
      step_time_ms: num(step["step_time_ms"]),
      breakdown_ms: breakdownOf(step["breakdown_ms"]),
    };
  });
}

/** `{avg, stddev, min, max}`; a missing figure is null. */
export function statsOf(value: unknown): Stats {
  const stats = record(value);
  return {
    avg: num(stats["avg"]),
    stddev: num(stats["stddev"]),
    min: num(stats["min"]),
    max: num(stats["max"]),
  };
}

function levelOf(value: unknown): InputBound {
  const level = str(value);
  return (INPUT_BOUND_LEVELS as readonly string[]).includes(level)
    ? (level as InputBound)
    : "unknown";
}

/** The verdict; a level the app does not know reads "unknown", a missing stated level the
 * reference's. */
export function bottleneckOf(value: unknown): Bottleneck {
  const bottleneck = record(value);
  const level = levelOf(bottleneck["input_bound"]);
  return {
    input_bound: level,
    stated_level: bottleneck["stated_level"] === undefined
      ? level
      : levelOf(bottleneck["stated_level"]),
    statement: str(bottleneck["statement"]),
    headline: str(bottleneck["headline"]),
    bound_by: str(bottleneck["bound_by"]),
  };
}
