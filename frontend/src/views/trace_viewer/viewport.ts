/**
 * The visible time range and the pure arithmetic of zooming, panning and the time ruler.
 *
 * Times are microseconds relative to the trace origin (the server's convention). A view is
 * `[startUs, endUs]` shown across `widthPx` CSS pixels of the track area. Zoom keeps the time
 * under the pointer fixed; every result is clamped to the trace's span (with a little room at
 * the ends) and to a smallest span of a few nanoseconds.
 */

export interface TimeView {
  readonly startUs: number;
  readonly endUs: number;
}

/** The smallest span a view may show (µs): 10 ns. */
export const MIN_SPAN_US = 0.01;

/** The x position (CSS px from the track area's left) of time `us`. */
export function xOf(view: TimeView, widthPx: number, us: number): number {
  return ((us - view.startUs) * widthPx) / (view.endUs - view.startUs);
}

/** The time (µs) at x position `x`. */
export function timeAt(view: TimeView, widthPx: number, x: number): number {
  return view.startUs + ((view.endUs - view.startUs) * x) / Math.max(1, widthPx);
}

/**
 * `view` kept inside the trace span `[0, fullUs]` plus a margin of 2 % on each side, never
 * narrower than MIN_SPAN_US, never wider than the span with its margins.
 */
export function clampView(view: TimeView, fullUs: number): TimeView {
  const margin = Math.max(fullUs * 0.02, MIN_SPAN_US);
  const lo = -margin;
  const hi = fullUs + margin;
  let span = Math.min(Math.max(view.endUs - view.startUs, MIN_SPAN_US), hi - lo);
  if (!Number.isFinite(span)) span = hi - lo;
  let start = view.startUs;
  if (!Number.isFinite(start)) start = lo;
  start = Math.min(Math.max(start, lo), hi - span);
  return { startUs: start, endUs: start + span };
}

/** The whole trace with its margins: the fully zoomed-out view. */
export function fullView(fullUs: number): TimeView {
  return clampView({ startUs: -Infinity, endUs: Infinity }, fullUs);
}

/** Zooms by `factor` (> 1 zooms in) keeping time `atUs` at the same x position. */
export function zoomAt(view: TimeView, factor: number, atUs: number, fullUs: number): TimeView {
  const span = (view.endUs - view.startUs) / factor;
  const ratio = (atUs - view.startUs) / (view.endUs - view.startUs);
  const startUs = atUs - ratio * span;
  return clampView({ startUs, endUs: startUs + span }, fullUs);
}

/** Pans by `deltaUs` (positive: later times come into view). */
export function panBy(view: TimeView, deltaUs: number, fullUs: number): TimeView {
  return clampView({ startUs: view.startUs + deltaUs, endUs: view.endUs + deltaUs }, fullUs);
}

/**
 * A view that shows the event `[startUs, startUs + durationUs]` centred, taking about a third
 * of the width (never narrower than MIN_SPAN_US * 3).
 */
export function viewAround(startUs: number, durationUs: number, fullUs: number): TimeView {
  const span = Math.max(durationUs * 3, MIN_SPAN_US * 3, 1);
  const centre = startUs + durationUs / 2;
  return clampView({ startUs: centre - span / 2, endUs: centre + span / 2 }, fullUs);
}

/** The step between ruler ticks: 1, 2 or 5 times a power of ten, at least `minUs`. */
export function niceStep(minUs: number): number {
  if (!(minUs > 0) || !Number.isFinite(minUs)) return 1;
  const power = 10 ** Math.floor(Math.log10(minUs));
  for (const m of [1, 2, 5, 10]) if (m * power >= minUs) return m * power;
  return 10 * power;
}

export interface Tick {
  readonly us: number;
  readonly x: number;
  readonly label: string;
}

/** A duration (µs) with a readable unit: "1.25 s", "3.4 ms", "12 µs", "250 ns". */
export function formatDuration(us: number): string {
  const abs = Math.abs(us);
  const trim = (value: number, unit: string): string =>
    `${Number(value.toPrecision(4)).toString()} ${unit}`;
  if (abs >= 1e6) return trim(us / 1e6, "s");
  if (abs >= 1e3) return trim(us / 1e3, "ms");
  if (abs >= 1 || abs === 0) return trim(us, "µs");
  return trim(us * 1e3, "ns");
}

/** Units of the ruler: µs per unit, largest first. */
const UNITS: readonly (readonly [string, number])[] = [
  ["s", 1e6],
  ["ms", 1e3],
  ["µs", 1],
  ["ns", 1e-3],
];

/**
 * `us` written exactly to the precision of `stepUs`: the unit of its magnitude and as many
 * decimals as the step needs ("1.79235 s" for a step of 50 µs).
 */
export function formatPrecise(us: number, stepUs: number): string {
  const abs = Math.abs(us);
  const [unit, scale] = UNITS.find(([, size]) => abs >= size) ?? (UNITS[UNITS.length - 1] as readonly [string, number]);
  const decimals = Math.min(12, Math.max(0, -Math.floor(Math.log10(stepUs / scale) + 1e-9)));
  return `${(us / scale).toFixed(decimals)} ${unit}`;
}

/**
 * Ruler ticks for `view` over `widthPx`, about one per `spacingPx` pixels.
 *
 * Labels stay distinct at every zoom. While every tick is under 1000 steps from zero, its
 * label is its time with four significant digits, which is exact ("1.25 s", "300 µs").
 * Further out (a 300 µs view 1.79 s into the trace) four digits would repeat
 * ("1.793 s, 1.793 s"), so the first tick is the labelled origin, written to the step's
 * precision ("1.79235 s"), and the others are offsets from it in the unit that fits the step
 * ("+50 µs", "+100 µs").
 */
export function rulerTicks(view: TimeView, widthPx: number, spacingPx = 100): Tick[] {
  const span = view.endUs - view.startUs;
  if (!(span > 0) || widthPx <= 0) return [];
  const step = niceStep((span * spacingPx) / widthPx);
  const firstIndex = Math.ceil(view.startUs / step);
  const times: number[] = [];
  for (let k = 0; k < 1000; k++) {
    // Round away float noise (0.30000000000000004) before formatting.
    const us = Number(((firstIndex + k) * step).toPrecision(15));
    if (us > view.endUs) break;
    times.push(us);
  }
  const farthest = Math.max(...times.map((us) => Math.abs(us)), 0);
  const absolute = farthest < 1000 * step;
  const origin = times[0] ?? 0;
  return times.map((us, k) => ({
    us,
    x: xOf(view, widthPx, us),
    label: absolute
      ? formatDuration(us)
      : k === 0
        ? formatPrecise(origin, step)
        : `+${formatDuration(Number((k * step).toPrecision(12)))}`,
  }));
}
