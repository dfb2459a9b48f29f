/**
 * One window of the trace (the `data?tag=trace_viewer` document), parsed into typed columns.
 *
 * The server sends parallel arrays grouped by track, each (pid, tid)'s events together in start
 * order (docs/api.md, "trace_viewer").
 * They become Float64Array / Int32Array columns, and every track row (pid, tid, depth) gets
 * the indices of its events in start order, so drawing a row is a binary search for the first
 * visible event and a walk to the last. Nothing here trusts the document's shape: a missing
 * or malformed key gives an empty window, never an exception.
 */
import { list, num, record, str } from "../format";

export interface TraceThread {
  readonly tid: number;
  /** The track's full name, id included ("tf_Compute/7334861595981986678"): hover, details. */
  readonly name: string;
  /** What the gutter shows (`readableLabels`): "tf_Compute 1", "python". */
  readonly label: string;
  readonly sortIndex: number;
  /** Deepest nesting level over the whole profile (0 = only outermost events). */
  readonly maxDepth: number;
  readonly numEvents: number;
}

export interface TraceProcess {
  readonly pid: number;
  readonly name: string;
  readonly host: string;
  readonly sortIndex: number;
  readonly threads: readonly TraceThread[];
}

/** The events of one track row (pid, tid, depth): indices into the window's columns. */
export interface RowEvents {
  readonly indices: Int32Array;
  /** The longest event of the row (µs), so a search for visible events can start early. */
  readonly maxDurationUs: number;
}

export interface TraceWindow {
  readonly originNs: number | null;
  readonly fullSpanMs: readonly [number, number];
  /** The window this answer covers, and the pixels across it it was filtered for. */
  readonly windowMs: readonly [number, number];
  readonly resolution: number;
  readonly totalEvents: number;
  readonly returnedEvents: number;
  readonly filteredEvents: number;
  readonly processes: readonly TraceProcess[];
  readonly strings: readonly string[];
  readonly id: Float64Array;
  readonly pid: Int32Array;
  readonly tid: Int32Array;
  readonly name: Int32Array;
  readonly startUs: Float64Array;
  readonly durationUs: Float64Array;
  readonly depth: Int32Array;
  /** Row key `rowKey(pid, tid, depth)` -> the row's events. */
  readonly rows: ReadonlyMap<string, RowEvents>;
  /** Dense stretches of sub-pixel events (filtered windows only); see `DensityBlocks`. */
  readonly density: DensityBlocks;
}

/**
 * The server's density blocks (docs/api.md, "trace_viewer", `density`): per row, runs of
 * events narrower than one of the window's pixels, with how many events each holds. Kept
 * events inside a block are only a sample of it; the block is what is drawn.
 */
export interface DensityBlocks {
  readonly name: Int32Array;
  readonly startUs: Float64Array;
  readonly endUs: Float64Array;
  readonly count: Float64Array;
  /** Row key -> the row's block indices, in start order (blocks of a row never overlap). */
  readonly rows: ReadonlyMap<string, Int32Array>;
}

function parseDensity(value: unknown): DensityBlocks {
  const r = record(value);
  const length = numbers(r["count"]).length;
  const pid = intColumn(r["pid"], length);
  const tid = intColumn(r["tid"], length);
  const depth = intColumn(r["depth"], length);
  const members = new Map<string, number[]>();
  for (let i = 0; i < length; i++) {
    const key = rowKey(pid[i] ?? 0, tid[i] ?? 0, depth[i] ?? 0);
    const list = members.get(key);
    if (list) list.push(i);
    else members.set(key, [i]);
  }
  const startUs = floatColumn(r["start_us"], length);
  const rows = new Map<string, Int32Array>();
  for (const [key, list] of members) {
    list.sort((a, b) => (startUs[a] ?? 0) - (startUs[b] ?? 0));
    rows.set(key, Int32Array.from(list));
  }
  return {
    name: intColumn(r["name"], length),
    startUs,
    endUs: floatColumn(r["end_us"], length),
    count: floatColumn(r["count"], length),
    rows,
  };
}

/** The key of a track row. */
export function rowKey(pid: number, tid: number, depth: number): string {
  return `${pid}:${tid}:${depth}`;
}

function numbers(value: unknown): readonly unknown[] {
  return list(value);
}

function floatColumn(value: unknown, length: number): Float64Array {
  const source = numbers(value);
  const out = new Float64Array(length);
  for (let i = 0; i < length; i++) out[i] = num(source[i]) ?? 0;
  return out;
}

function intColumn(value: unknown, length: number): Int32Array {
  const source = numbers(value);
  const out = new Int32Array(length);
  for (let i = 0; i < length; i++) out[i] = num(source[i]) ?? 0;
  return out;
}

function idColumn(value: unknown, length: number): Float64Array {
  // Ids may exceed 2^31 on huge profiles: kept as doubles (exact up to 2^53).
  return floatColumn(value, length);
}

function parseThread(value: unknown): TraceThread {
  const r = record(value);
  return {
    tid: num(r["tid"]) ?? 0,
    name: str(r["name"], String(num(r["tid"]) ?? "")),
    label: "",
    sortIndex: num(r["sort_index"]) ?? 0,
    maxDepth: Math.max(0, num(r["max_depth"]) ?? 0),
    numEvents: num(r["num_events"]) ?? 0,
  };
}

/** A long numeric id after the last "/" of a thread's name (TF's 64-bit thread hashes). */
const LONG_ID = /\/-?\d{6,}$/;

/**
 * Readable gutter labels for one process's threads, in track order (issue 29): each name
 * without its long numeric id ("tf_Compute/7334861595981986678" -> "tf_Compute"); names that
 * several threads share are numbered 1, 2, ... in track order ("tf_Compute 1", "tf_Compute 2").
 * Short ids ("Host Threads/546") say which thread it is and stay. The full name stays the
 * thread's `name` (hover note, details).
 */
export function readableLabels(names: readonly string[]): string[] {
  const bases = names.map((name) => {
    const base = name.replace(LONG_ID, "");
    return base === "" ? name : base;
  });
  const total = new Map<string, number>();
  for (const base of bases) total.set(base, (total.get(base) ?? 0) + 1);
  const seen = new Map<string, number>();
  return bases.map((base) => {
    if ((total.get(base) ?? 0) < 2) return base;
    const k = (seen.get(base) ?? 0) + 1;
    seen.set(base, k);
    return `${base} ${String(k)}`;
  });
}

function parseProcess(value: unknown): TraceProcess {
  const r = record(value);
  const parsed = list(r["threads"]).map(parseThread);
  parsed.sort((a, b) => a.sortIndex - b.sortIndex || a.tid - b.tid);
  const labels = readableLabels(parsed.map((t) => t.name));
  const threads = parsed.map((t, k) => ({ ...t, label: labels[k] ?? t.name }));
  return {
    pid: num(r["pid"]) ?? 0,
    name: str(r["name"], `pid ${String(num(r["pid"]) ?? "")}`),
    host: str(r["host"]),
    sortIndex: num(r["sort_index"]) ?? 0,
    threads,
  };
}

function span(value: unknown, fallback: readonly [number, number]): readonly [number, number] {
  const [a, b] = list(value).map(num);
  return a !== null && a !== undefined && b !== null && b !== undefined && b >= a
    ? [a, b]
    : fallback;
}

/** Groups event indices by row; each (pid, tid)'s events arrive together in start order. */
function groupRows(
  pid: Int32Array,
  tid: Int32Array,
  depth: Int32Array,
  durationUs: Float64Array,
): Map<string, RowEvents> {
  const rows = new Map<string, RowEvents>();
  const n = pid.length;
  let begin = 0;
  while (begin < n) {
    // One run of a (pid, tid): count per depth, then fill per depth.
    const p = pid[begin] ?? 0;
    const t = tid[begin] ?? 0;
    let end = begin;
    let deepest = 0;
    while (end < n && pid[end] === p && tid[end] === t) {
      deepest = Math.max(deepest, depth[end] ?? 0);
      end++;
    }
    const counts = new Int32Array(deepest + 1);
    for (let i = begin; i < end; i++) {
      const d = Math.max(0, depth[i] ?? 0);
      counts[d] = (counts[d] ?? 0) + 1;
    }
    const lists = Array.from(counts, (count) => new Int32Array(count));
    const fill = new Int32Array(deepest + 1);
    const maxDur = new Float64Array(deepest + 1);
    for (let i = begin; i < end; i++) {
      const d = Math.max(0, depth[i] ?? 0);
      const at = fill[d] ?? 0;
      (lists[d] as Int32Array)[at] = i;
      fill[d] = at + 1;
      const duration = durationUs[i] ?? 0;
      if (duration > (maxDur[d] ?? 0)) maxDur[d] = duration;
    }
    lists.forEach((indices, d) => {
      if (indices.length) rows.set(rowKey(p, t, d), { indices, maxDurationUs: maxDur[d] ?? 0 });
    });
    begin = end;
  }
  return rows;
}

/** Parses a trace_viewer document (or any value: a malformed one gives an empty window). */
export function parseWindow(doc: unknown): TraceWindow {
  const r = record(doc);
  const events = record(r["events"]);
  const ids = numbers(events["id"]);
  const length = ids.length;
  const pid = intColumn(events["pid"], length);
  const tid = intColumn(events["tid"], length);
  const depth = intColumn(events["depth"], length);
  const durationUs = floatColumn(events["duration_us"], length);
  const fullSpanMs = span(r["full_timespan_ms"], [0, 0]);
  const processes = list(r["processes"]).map(parseProcess);
  processes.sort((a, b) => a.sortIndex - b.sortIndex || a.pid - b.pid);
  return {
    originNs: num(r["origin_ns"]),
    fullSpanMs,
    windowMs: span(r["window_ms"], fullSpanMs),
    resolution: num(r["resolution"]) ?? 0,
    totalEvents: num(r["total_events"]) ?? 0,
    returnedEvents: num(r["returned_events"]) ?? length,
    filteredEvents: num(r["filtered_events"]) ?? 0,
    processes,
    strings: list(r["strings"]).map((s) => str(s)),
    id: idColumn(events["id"], length),
    pid,
    tid,
    name: intColumn(events["name"], length),
    startUs: floatColumn(events["start_us"], length),
    durationUs,
    depth,
    rows: groupRows(pid, tid, depth, durationUs),
    density: parseDensity(r["density"]),
  };
}

/** The name of event `i` of a window. */
export function eventName(win: TraceWindow, i: number): string {
  return win.strings[win.name[i] ?? -1] ?? "";
}

/**
 * The first position in `indices` whose event may reach `fromUs` or later: events of a row
 * are in start order, and none is longer than `maxDurationUs`, so every event before the
 * first start >= fromUs - maxDurationUs ends before fromUs.
 */
export function firstVisible(win: TraceWindow, row: RowEvents, fromUs: number): number {
  const limit = fromUs - row.maxDurationUs;
  const { indices } = row;
  let lo = 0;
  let hi = indices.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((win.startUs[indices[mid] ?? 0] ?? 0) < limit) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
