/**
 * Draws one frame of the timeline on a Canvas2D context (CSS pixels; the caller scales for
 * devicePixelRatio).
 *
 * Screen layout: a time ruler on top (RULER_HEIGHT_PX), a label gutter on the left
 * (GUTTER_WIDTH_PX), the track area in the rest. Only the rows inside the scrolled viewport
 * are visited (layout.visibleRange), and in each row only the events inside the view (binary
 * search, then a walk until the first event that starts after the view).
 *
 * Per row, events narrower than a pixel are merged with their neighbours: a run of sub-pixel
 * events that touch within a pixel is drawn once. A run of one event is a 1 px bar in its
 * colour; a run of several is a *density block*, hatched (diagonal dark stripes over the
 * first event's colour) so that it never reads as one long event, labelled "N events" where
 * it is wide enough, and hovering it says how many events it holds. Where the window was
 * filtered, the server's density blocks (data.ts `DensityBlocks`) join the runs with their
 * true counts, and the sampled events inside them are not drawn one by one. So a dense region
 * costs about one rectangle per pixel column, whatever it holds. Rectangles are collected
 * per colour and each colour is filled as one path (solid, or its hatch pattern): fillStyle
 * is set once per palette entry per frame. Names are drawn only inside rectangles wide enough
 * for a few characters, cut to the width with an ellipsis (estimated from the font's average
 * glyph width, never measured per event).
 *
 * Boundaries stay visible at every zoom (issue 29: 130 back-to-back 10 ms steps drew as one
 * bar): where a bar starts at (or within a pixel of) the right edge of the row's previous bar,
 * a 1 px line of the background is drawn at its left edge; and a run of sub-pixel items never
 * spans two events of the row above (its parent row): it ends where the item under it changes
 * parent event (or leaves one), and the next run starts with a boundary. The server cuts its
 * density blocks the same way (trace/window.py `split_at_parents`).
 *
 * The ruler's labels stay distinct at every zoom (viewport.ts `rulerTicks`).
 */
import { fitMiddle, middleCut } from "../../components/middle_text";
import { PALETTE, SELECTED_OUTLINE, TEXT_COLOUR, colourIndex } from "./colour";
import { eventName, firstVisible, rowKey, type TraceWindow } from "./data";
import { rowOfEvent, visibleRange, type Layout, type Row } from "./layout";
import { formatDuration, rulerTicks, xOf, type TimeView } from "./viewport";

export const RULER_HEIGHT_PX = 24;
export const GUTTER_WIDTH_PX = 200;
const FONT = "11px system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif";
const HEADER_FONT = "600 12px system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif";
/** A rectangle gets a name only if it is at least this wide (CSS px). */
const MIN_TEXT_WIDTH_PX = 24;
/** Text baseline offset inside an event rectangle (rectangles are ROW_HEIGHT_PX - 2 tall). */
const ROW_TEXT_OFFSET_PX = 8;
/** At most this many rectangles are reported as click targets (test hook). */
const MAX_TARGETS = 20;
/** A density block gets its "N events" label only if it is at least this wide (CSS px). */
const MIN_BLOCK_LABEL_PX = 64;

/** An event placed on the time axis: what selection, search and flows refer to. */
export interface PlacedEvent {
  readonly id: number;
  readonly name: string;
  readonly pid: number;
  readonly tid: number;
  readonly depth: number;
  readonly startUs: number;
  readonly durationUs: number;
}

export interface FlowArrow {
  readonly from: PlacedEvent;
  readonly to: PlacedEvent;
}

export interface FrameInput {
  readonly widthPx: number;
  readonly heightPx: number;
  readonly view: TimeView;
  readonly layout: Layout;
  readonly scrollTop: number;
  readonly win: TraceWindow | null;
  readonly selected: PlacedEvent | null;
  readonly flows: readonly FlowArrow[];
  readonly measure: TimeView | null;
}

/** A drawn rectangle a click can hit (CSS px, canvas coordinates). */
export interface Target {
  readonly id: number;
  readonly name: string;
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly h: number;
}

/** A 1 px boundary between two touching bars of a row (canvas CSS px). */
export interface Boundary {
  readonly row: string;
  readonly x: number;
  readonly y: number;
  readonly h: number;
}

/** The background line drawn at a boundary. */
const BOUNDARY_COLOUR = "#ffffff";

/** A drawn density block: several events too small to draw one by one. */
export interface DrawnBlock {
  readonly row: string;
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly h: number;
  /** How many events it stands for. */
  readonly count: number;
  readonly startUs: number;
  readonly endUs: number;
}

export interface FrameStats {
  /** Track rows drawn (inside the viewport, of expanded processes). */
  readonly rows: number;
  /** Their keys, `pid:tid:depth`. */
  readonly rowKeys: string[];
  /** Events drawn, merged or not: those of drawn rows that overlap the view. */
  readonly events: number;
  /** Rectangles filled after merging sub-pixel events. */
  readonly rects: number;
  readonly texts: number;
  /** Flow arrows drawn (both ends on known rows). */
  readonly flows: number;
  /** The widest drawn events, for tests that click one. */
  readonly targets: readonly Target[];
  /** Every density block drawn (hover and click read them), in drawing order. */
  readonly blocks: readonly DrawnBlock[];
  /** Boundaries drawn between touching bars, by row then x. */
  readonly boundaries: readonly Boundary[];
  /** The ruler's tick labels, left to right. */
  readonly rulerLabels: readonly string[];
  /** The thread labels drawn in the gutter: the full name, its readable label and the text
   *  drawn (the label, cut in the middle when too long). */
  readonly threadLabels: readonly { name: string; label: string; shown: string; width: number; y: number }[];
}

/** Content y of a row -> canvas y. */
function screenY(input: FrameInput, contentY: number): number {
  return RULER_HEIGHT_PX + contentY - input.scrollTop;
}

/** Rectangles per palette entry: flat [x, y, w, h, ...] lists, reused between frames. */
const buckets: number[][] = PALETTE.map(() => []);
/** Density blocks per palette entry, filled with that colour's hatch pattern. */
const hatchedBuckets: number[][] = PALETTE.map(() => []);
/** Text jobs of the frame: [x, y, w, event index, ...]. */
const texts: number[] = [];
/** One hatch pattern per palette entry (made on first use; patterns follow the transform). */
const patterns = new Map<number, CanvasPattern | string>();

/** Dark diagonal stripes over `colour`: the fill of density blocks. */
function hatchPattern(ctx: CanvasRenderingContext2D, colour: number): CanvasPattern | string {
  const made = patterns.get(colour);
  if (made !== undefined) return made;
  const base = PALETTE[colour] as string;
  const tile = document.createElement("canvas");
  tile.width = 6;
  tile.height = 6;
  const t = tile.getContext("2d");
  let pattern: CanvasPattern | string = base;
  if (t !== null) {
    t.fillStyle = base;
    t.fillRect(0, 0, 6, 6);
    t.strokeStyle = "rgba(32, 33, 36, 0.45)";
    t.lineWidth = 1.5;
    t.beginPath();
    // A 45° stripe that tiles seamlessly: the main diagonal and the two corner pieces.
    t.moveTo(-1, 7);
    t.lineTo(7, -1);
    t.moveTo(-1, 1);
    t.lineTo(1, -1);
    t.moveTo(5, 7);
    t.lineTo(7, 5);
    t.stroke();
    pattern = ctx.createPattern(tile, "repeat") ?? base;
  }
  patterns.set(colour, pattern);
  return pattern;
}
let glyphWidthPx = 0;

function averageGlyphWidth(ctx: CanvasRenderingContext2D): number {
  if (glyphWidthPx > 0) return glyphWidthPx;
  const sample = "abcdefghijklmnopqrstuvwxyz_ABCDEFGHIJ:/0123456789";
  ctx.font = FONT;
  glyphWidthPx = ctx.measureText(sample).width / sample.length || 6;
  return glyphWidthPx;
}

/** `text` cut to about `widthPx` (an ellipsis marks the cut; "" when nothing fits). */
export function fitText(text: string, widthPx: number, glyphPx: number): string {
  const chars = Math.floor(widthPx / glyphPx);
  if (chars >= text.length) return text;
  if (chars < 3) return "";
  return `${text.slice(0, chars - 1)}…`;
}

/** Gutter labels already fitted, by width and name (names repeat every frame). */
const fittedNames = new Map<string, string>();
const MAX_FITTED_NAMES = 4096;

/** `name` cut in the middle to `widthPx` as the context's current font measures it. */
function fitMiddleText(ctx: CanvasRenderingContext2D, name: string, widthPx: number): string {
  const key = `${widthPx}|${ctx.font}|${name}`;
  const known = fittedNames.get(key);
  if (known !== undefined) return known;
  const measure = (text: string) => ctx.measureText(text).width;
  const shown = middleCut(name, fitMiddle(name, widthPx, measure));
  if (fittedNames.size >= MAX_FITTED_NAMES) fittedNames.clear();
  fittedNames.set(key, shown);
  return shown;
}

/** The first index in `indices` (blocks in start order) whose block ends at or after `us`. */
function firstBlockEnding(endUs: Float64Array, indices: Int32Array, us: number): number {
  let lo = 0;
  let hi = indices.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((endUs[indices[mid] ?? 0] ?? 0) < us) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Draws the events of one track row; adds its rectangles to the buckets. */
function drawRowEvents(
  input: FrameInput,
  win: TraceWindow,
  row: Row & { kind: "track" },
  trackWidth: number,
  targets: Target[],
  blocks: DrawnBlock[],
  counts: { events: number; rects: number },
  boundaries: Boundary[],
): void {
  const key = rowKey(row.process.pid, row.thread.tid, row.depth);
  const events = win.rows.get(key);
  const { view } = input;
  const scale = trackWidth / (view.endUs - view.startUs);
  // The server's blocks stand for sub-pixel events only while its pixel is no wider than
  // a screen pixel (a complete window zoomed in further is drawn from its events alone).
  const serverPixelUs =
    win.resolution > 0 ? ((win.windowMs[1] - win.windowMs[0]) * 1000) / win.resolution : Infinity;
  const density = win.density;
  const rowBlocks = serverPixelUs <= (1 / scale) * 1.001 ? density.rows.get(key) : undefined;
  if (!events && !rowBlocks) return;
  const y = screenY(input, row.y) + 1;
  const h = row.height - 2;
  // The row above: a run of sub-pixel items never spans an edge of one of its bars (its
  // events a pixel wide or more; narrower ones draw no edge to respect).
  const parentRow = row.depth >= 1 ? win.rows.get(rowKey(row.process.pid, row.thread.tid, row.depth - 1)) : undefined;
  const parents = parentRow ? parentRow.indices : new Int32Array(0);
  const minParentUs = 1 / scale;
  let parentAt = -1; // the last parent event starting at or before the items so far
  let wideSeen = 0; // parent bars among them
  let wideEndUs = -Infinity; // the latest end of those bars
  /** Which stretch between parent-bar edges `us` is in; items come in start order. */
  const slotOf = (us: number): number => {
    while (parentAt + 1 < parents.length) {
      const p = parents[parentAt + 1] as number;
      const ps = win.startUs[p] as number;
      if (ps > us) break;
      parentAt++;
      const pd = win.durationUs[p] as number;
      if (pd >= minParentUs) {
        wideSeen++;
        wideEndUs = Math.max(wideEndUs, ps + pd);
      }
    }
    return 2 * wideSeen + (us < wideEndUs ? 0 : 1);
  };
  // The right edge (track x) of the row's last rectangle: a bar starting there gets a boundary.
  let lastRight = -Infinity;
  const boundaryAt = (left: number): void => {
    if (left <= lastRight + 1 && left >= 0 && left <= trackWidth) boundaries.push({ row: key, x: GUTTER_WIDTH_PX + left, y, h });
  };
  // The pending run of sub-pixel items (events, server blocks), in screen x.
  let runStart = 0;
  let runEnd = -Infinity;
  let runColour = -1;
  let runCount = 0;
  let runStartUs = 0;
  let runEndUs = 0;
  let runSlot = -1;
  const flush = (): void => {
    if (runColour < 0) return;
    boundaryAt(runStart);
    lastRight = Math.max(runEnd, runStart + 1);
    const x = GUTTER_WIDTH_PX + Math.max(runStart, -2);
    const w = Math.max(Math.min(runEnd, trackWidth + 2) - Math.max(runStart, -2), 1);
    if (runCount >= 2) {
      (hatchedBuckets[runColour] as number[]).push(x, y, w, h);
      blocks.push({ row: key, x, y, w, h, count: runCount, startUs: runStartUs, endUs: runEndUs });
    } else {
      (buckets[runColour] as number[]).push(x, y, w, h);
    }
    counts.rects++;
    runColour = -1;
  };
  /** Adds a sub-pixel item [x0, x1] holding `count` events to the run (or starts a new one). */
  const add = (x0: number, x1: number, count: number, colour: number, s: number, e: number): void => {
    const slot = slotOf(s);
    if (runColour >= 0 && x0 <= runEnd + 1 && slot === runSlot) {
      if (x1 > runEnd) runEnd = x1;
      if (e > runEndUs) runEndUs = e;
      runCount += count;
      return;
    }
    flush();
    runColour = colour;
    runSlot = slot;
    runStart = x0;
    runEnd = Math.max(x1, x0 + 1);
    runCount = count;
    runStartUs = s;
    runEndUs = e;
  };
  let b = rowBlocks ? firstBlockEnding(density.endUs, rowBlocks, view.startUs) : 0;
  const blockCount = rowBlocks ? rowBlocks.length : 0;
  let coveredUntilUs = -Infinity;
  /** Adds the server blocks that start at or before `us` to the run. */
  const addBlocksUntil = (us: number): void => {
    while (rowBlocks && b < blockCount) {
      const j = rowBlocks[b] as number;
      const s = density.startUs[j] as number;
      if (s > us || s > view.endUs) return;
      const e = density.endUs[j] as number;
      const colour = colourIndex(win.strings[density.name[j] ?? -1] ?? "");
      add((s - view.startUs) * scale, (e - view.startUs) * scale, density.count[j] as number, colour, s, e);
      coveredUntilUs = Math.max(coveredUntilUs, e);
      b++;
    }
  };
  const indices = events ? events.indices : new Int32Array(0);
  const start = win.startUs;
  const duration = win.durationUs;
  for (let k = events ? firstVisible(win, events, view.startUs) : 0; k < indices.length; k++) {
    const i = indices[k] as number;
    const s = start[i] as number;
    if (s > view.endUs) break;
    const d = duration[i] as number;
    if (s + d < view.startUs) continue;
    counts.events++;
    addBlocksUntil(s);
    const x0 = (s - view.startUs) * scale;
    const x1 = x0 + d * scale;
    if (x1 - x0 < 1) {
      // Sub-pixel: inside a server block it is already counted there; else it joins the run.
      if (s + d <= coveredUntilUs) continue;
      add(x0, x1, 1, colourIndex(eventName(win, i)), s, s + d);
      continue;
    }
    flush();
    const left = Math.max(x0, -2);
    const right = Math.min(x1, trackWidth + 2);
    const w = right - left;
    boundaryAt(x0);
    lastRight = x1;
    (buckets[colourIndex(eventName(win, i))] as number[]).push(GUTTER_WIDTH_PX + left, y, w, h);
    counts.rects++;
    if (w >= MIN_TEXT_WIDTH_PX) texts.push(GUTTER_WIDTH_PX + left, y, w, i);
    if (targets.length < MAX_TARGETS || w > (targets[targets.length - 1] as Target).w) {
      targets.push({ id: win.id[i] as number, name: eventName(win, i), x: GUTTER_WIDTH_PX + left, y, w, h });
      targets.sort((a, b) => b.w - a.w);
      if (targets.length > MAX_TARGETS) targets.pop();
    }
  }
  addBlocksUntil(view.endUs);
  flush();
}

function drawRuler(
  ctx: CanvasRenderingContext2D,
  input: FrameInput,
  trackWidth: number,
  labels: string[],
): void {
  ctx.fillStyle = "#fafafa";
  ctx.fillRect(0, 0, input.widthPx, RULER_HEIGHT_PX);
  ctx.fillStyle = "#e0e0e0";
  ctx.fillRect(0, RULER_HEIGHT_PX - 1, input.widthPx, 1);
  ctx.font = FONT;
  ctx.textBaseline = "middle";
  ctx.fillStyle = "#616161";
  const ticks = rulerTicks(input.view, trackWidth);
  labels.push(...ticks.map((tick) => tick.label));
  ctx.beginPath();
  for (const tick of ticks) {
    const x = Math.round(GUTTER_WIDTH_PX + tick.x) + 0.5;
    ctx.moveTo(x, RULER_HEIGHT_PX - 7);
    ctx.lineTo(x, RULER_HEIGHT_PX);
  }
  ctx.strokeStyle = "#9e9e9e";
  ctx.lineWidth = 1;
  ctx.stroke();
  for (const tick of ticks) ctx.fillText(tick.label, GUTTER_WIDTH_PX + tick.x + 3, 9);
  ctx.fillStyle = "#616161";
  ctx.fillText(`view ${formatDuration(input.view.endUs - input.view.startUs)}`, 8, 12);
}

function drawGridLines(ctx: CanvasRenderingContext2D, input: FrameInput, trackWidth: number): void {
  ctx.beginPath();
  for (const tick of rulerTicks(input.view, trackWidth)) {
    const x = Math.round(GUTTER_WIDTH_PX + tick.x) + 0.5;
    ctx.moveTo(x, RULER_HEIGHT_PX);
    ctx.lineTo(x, input.heightPx);
  }
  ctx.strokeStyle = "#eeeeee";
  ctx.lineWidth = 1;
  ctx.stroke();
}

/** Room for a thread name in the gutter (CSS px): from its indent to the gutter's edge. */
const THREAD_LABEL_X_PX = 14;
const THREAD_LABEL_WIDTH_PX = GUTTER_WIDTH_PX - THREAD_LABEL_X_PX - 6;

function drawRowChrome(
  ctx: CanvasRenderingContext2D,
  input: FrameInput,
  rows: readonly Row[],
  threadLabels: { name: string; label: string; shown: string; width: number; y: number }[],
): void {
  // Process headers across the full width (label drawn below, over the gutter too).
  for (const row of rows) {
    if (row.kind !== "process") continue;
    const y = screenY(input, row.y);
    ctx.fillStyle = "#eceff1";
    ctx.fillRect(0, y, input.widthPx, row.height);
    ctx.fillStyle = "#cfd8dc";
    ctx.fillRect(0, y + row.height - 1, input.widthPx, 1);
  }
  // The gutter: thread names; process names run on into the track area.
  ctx.fillStyle = "#fafafa";
  ctx.fillRect(0, RULER_HEIGHT_PX, GUTTER_WIDTH_PX, input.heightPx);
  ctx.fillStyle = "#e0e0e0";
  ctx.fillRect(GUTTER_WIDTH_PX - 1, RULER_HEIGHT_PX, 1, input.heightPx);
  ctx.font = FONT;
  for (const row of rows) {
    const y = screenY(input, row.y);
    if (row.kind === "process") {
      ctx.fillStyle = "#eceff1";
      ctx.fillRect(0, y, GUTTER_WIDTH_PX, row.height);
      ctx.fillStyle = "#263238";
      ctx.font = HEADER_FONT;
      const label = `${row.collapsed ? "▸" : "▾"} ${row.process.name}`;
      ctx.fillText(fitText(label, input.widthPx - 16, 7), 6, y + row.height / 2);
      ctx.font = FONT;
    } else if (row.depth === 0) {
      // The readable label (data.ts `readableLabels`: no long numeric id, alike names
      // numbered), cut in the middle if still too long; hover shows the full name.
      const label = row.thread.label || row.thread.name;
      const shown = fitMiddleText(ctx, label, THREAD_LABEL_WIDTH_PX);
      const width = ctx.measureText(shown).width;
      threadLabels.push({ name: row.thread.name, label, shown, width, y: y + row.height / 2 });
      ctx.fillStyle = "#424242";
      ctx.fillText(shown, THREAD_LABEL_X_PX, y + row.height / 2);
    }
  }
}

/** Where an event sits on screen (x in track coordinates + gutter, y the row's middle). */
function anchor(
  input: FrameInput,
  trackWidth: number,
  event: PlacedEvent,
): { x: number; y: number; row: Row } | null {
  const row = rowOfEvent(input.layout, event.pid, event.tid, event.depth);
  if (row === null) return null;
  const x = GUTTER_WIDTH_PX + xOf(input.view, trackWidth, event.startUs);
  return { x, y: screenY(input, row.y) + row.height / 2, row };
}

function drawSelection(ctx: CanvasRenderingContext2D, input: FrameInput, trackWidth: number): void {
  const selected = input.selected;
  if (selected === null) return;
  const at = anchor(input, trackWidth, selected);
  if (at === null) return;
  const x1 = GUTTER_WIDTH_PX + xOf(input.view, trackWidth, selected.startUs + selected.durationUs);
  const left = Math.max(at.x, GUTTER_WIDTH_PX - 3);
  const right = Math.min(Math.max(x1, at.x + 2), input.widthPx + 3);
  ctx.strokeStyle = SELECTED_OUTLINE;
  ctx.lineWidth = 2;
  ctx.strokeRect(left, at.y - at.row.height / 2 + 1, right - left, at.row.height - 2);
}

function drawFlows(ctx: CanvasRenderingContext2D, input: FrameInput, trackWidth: number): number {
  let drawn = 0;
  ctx.strokeStyle = "#6a1b9a";
  ctx.fillStyle = "#6a1b9a";
  ctx.lineWidth = 1.5;
  for (const flow of input.flows) {
    const a = anchor(input, trackWidth, flow.from);
    const b = anchor(input, trackWidth, flow.to);
    if (a === null || b === null) continue;
    ctx.beginPath();
    ctx.moveTo(a.x, a.y);
    const bend = Math.max(Math.abs(b.x - a.x) / 2, 12);
    ctx.bezierCurveTo(a.x + bend, a.y, b.x - bend, b.y, b.x, b.y);
    ctx.stroke();
    // Arrowhead pointing right, into the target's start.
    ctx.beginPath();
    ctx.moveTo(b.x, b.y);
    ctx.lineTo(b.x - 7, b.y - 4);
    ctx.lineTo(b.x - 7, b.y + 4);
    ctx.closePath();
    ctx.fill();
    drawn++;
  }
  return drawn;
}

function drawMeasure(ctx: CanvasRenderingContext2D, input: FrameInput, trackWidth: number): void {
  const m = input.measure;
  if (m === null) return;
  const a = GUTTER_WIDTH_PX + xOf(input.view, trackWidth, Math.min(m.startUs, m.endUs));
  const b = GUTTER_WIDTH_PX + xOf(input.view, trackWidth, Math.max(m.startUs, m.endUs));
  ctx.fillStyle = "rgba(33, 150, 243, 0.12)";
  ctx.fillRect(a, RULER_HEIGHT_PX, b - a, input.heightPx);
  ctx.fillStyle = "#1565c0";
  ctx.fillRect(Math.round(a), 0, 1, input.heightPx);
  ctx.fillRect(Math.round(b), 0, 1, input.heightPx);
  const label = formatDuration(Math.abs(m.endUs - m.startUs));
  ctx.font = HEADER_FONT;
  const w = ctx.measureText(label).width + 10;
  const x = Math.min(Math.max((a + b) / 2 - w / 2, GUTTER_WIDTH_PX), input.widthPx - w);
  ctx.fillRect(x, 2, w, RULER_HEIGHT_PX - 4);
  ctx.fillStyle = "#fff";
  ctx.fillText(label, x + 5, RULER_HEIGHT_PX / 2);
}

/** Draws a frame; returns what it drew. */
export function drawFrame(ctx: CanvasRenderingContext2D, input: FrameInput): FrameStats {
  const { widthPx, heightPx, layout, win } = input;
  const trackWidth = Math.max(1, widthPx - GUTTER_WIDTH_PX);
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, widthPx, heightPx);
  ctx.textBaseline = "middle";
  drawGridLines(ctx, input, trackWidth);

  const [first, last] = visibleRange(
    layout,
    input.scrollTop,
    input.scrollTop + heightPx - RULER_HEIGHT_PX,
  );
  const rows = layout.rows.slice(first, last);
  const counts = { events: 0, rects: 0 };
  const targets: Target[] = [];
  const blocks: DrawnBlock[] = [];
  const boundaries: Boundary[] = [];
  const rowKeys: string[] = [];
  for (const list of buckets) list.length = 0;
  for (const list of hatchedBuckets) list.length = 0;
  texts.length = 0;
  for (const row of rows) {
    if (row.kind !== "track") continue;
    rowKeys.push(rowKey(row.process.pid, row.thread.tid, row.depth));
    if (win !== null) drawRowEvents(input, win, row, trackWidth, targets, blocks, counts, boundaries);
  }
  // One path and one fillStyle per colour.
  buckets.forEach((list, colour) => {
    if (list.length === 0) return;
    ctx.fillStyle = PALETTE[colour] as string;
    ctx.beginPath();
    for (let k = 0; k < list.length; k += 4)
      ctx.rect(list[k] as number, list[k + 1] as number, list[k + 2] as number, list[k + 3] as number);
    ctx.fill();
  });
  hatchedBuckets.forEach((list, colour) => {
    if (list.length === 0) return;
    ctx.fillStyle = hatchPattern(ctx, colour);
    ctx.beginPath();
    for (let k = 0; k < list.length; k += 4)
      ctx.rect(list[k] as number, list[k + 1] as number, list[k + 2] as number, list[k + 3] as number);
    ctx.fill();
  });
  // Boundaries between touching bars, over their fills.
  ctx.fillStyle = BOUNDARY_COLOUR;
  ctx.beginPath();
  for (const b of boundaries) ctx.rect(Math.round(b.x), b.y, 1, b.h);
  ctx.fill();
  ctx.font = FONT;
  const glyph = averageGlyphWidth(ctx);
  ctx.fillStyle = TEXT_COLOUR;
  let textCount = 0;
  if (win !== null) {
    for (let k = 0; k < texts.length; k += 4) {
      const x = texts[k] as number;
      const left = Math.max(x, GUTTER_WIDTH_PX);
      const w = (texts[k + 2] as number) - (left - x) - 6;
      const label = fitText(eventName(win, texts[k + 3] as number), w, glyph);
      if (!label) continue;
      ctx.fillText(label, left + 3, (texts[k + 1] as number) + ROW_TEXT_OFFSET_PX);
      textCount++;
    }
    for (const block of blocks) {
      const left = Math.max(block.x, GUTTER_WIDTH_PX);
      const w = block.x + block.w - left;
      if (w < MIN_BLOCK_LABEL_PX) continue;
      const label = fitText(`${block.count.toLocaleString("en-US")} events`, w - 10, glyph);
      if (!label) continue;
      // On a light plate, so the label reads over the stripes.
      const textW = label.length * glyph + 6;
      ctx.fillStyle = "rgba(255, 255, 255, 0.85)";
      ctx.fillRect(left + 2, block.y + 1, textW, block.h - 2);
      ctx.fillStyle = TEXT_COLOUR;
      ctx.fillText(label, left + 5, block.y + ROW_TEXT_OFFSET_PX);
      textCount++;
    }
  }
  drawSelection(ctx, input, trackWidth);
  const flows = drawFlows(ctx, input, trackWidth);
  const threadLabels: { name: string; label: string; shown: string; width: number; y: number }[] = [];
  drawRowChrome(ctx, input, rows, threadLabels);
  const rulerLabels: string[] = [];
  drawRuler(ctx, input, trackWidth, rulerLabels);
  drawMeasure(ctx, input, trackWidth);
  return {
    rows: rowKeys.length,
    rowKeys,
    events: counts.events,
    rects: counts.rects,
    texts: textCount,
    flows,
    targets,
    blocks,
    boundaries,
    rulerLabels,
    threadLabels,
  };
}
