/**
 * Vertical layout: the list of rows (process headers and track rows) with their y positions.
 *
 * Every process is a section: a header row (click to collapse or expand), then, when
 * expanded, each thread's rows, one per nesting depth (0 .. max_depth). The layout lists
 * every track of the profile (the server's `processes`), so it is computed once per profile
 * and collapse state, not per window. Rows are found by y with a binary search, so only the
 * rows inside the scrolled viewport are ever drawn.
 */
import type { TraceProcess, TraceThread } from "./data";

export const HEADER_HEIGHT_PX = 22;
export const ROW_HEIGHT_PX = 18;
/** Space under the last row of a thread, so threads read as groups. */
export const THREAD_GAP_PX = 3;

export type Row =
  | {
      readonly kind: "process";
      readonly y: number;
      readonly height: number;
      readonly process: TraceProcess;
      readonly collapsed: boolean;
    }
  | {
      readonly kind: "track";
      readonly y: number;
      readonly height: number;
      readonly process: TraceProcess;
      readonly thread: TraceThread;
      readonly depth: number;
    };

export interface Layout {
  readonly rows: readonly Row[];
  readonly heightPx: number;
  /** `pid:tid:depth` -> index into rows (expanded tracks only). */
  readonly trackIndex: ReadonlyMap<string, number>;
  /** pid -> index of its header row. */
  readonly processIndex: ReadonlyMap<number, number>;
}

/** Lays out `processes`; pids in `collapsed` show only their header. */
export function layoutRows(
  processes: readonly TraceProcess[],
  collapsed: ReadonlySet<number>,
): Layout {
  const rows: Row[] = [];
  const trackIndex = new Map<string, number>();
  const processIndex = new Map<number, number>();
  let y = 0;
  for (const process of processes) {
    const isCollapsed = collapsed.has(process.pid);
    processIndex.set(process.pid, rows.length);
    rows.push({ kind: "process", y, height: HEADER_HEIGHT_PX, process, collapsed: isCollapsed });
    y += HEADER_HEIGHT_PX;
    if (isCollapsed) continue;
    for (const thread of process.threads) {
      for (let depth = 0; depth <= thread.maxDepth; depth++) {
        trackIndex.set(`${process.pid}:${thread.tid}:${depth}`, rows.length);
        rows.push({ kind: "track", y, height: ROW_HEIGHT_PX, process, thread, depth });
        y += ROW_HEIGHT_PX;
      }
      y += THREAD_GAP_PX;
    }
  }
  return { rows, heightPx: y, trackIndex, processIndex };
}

/** The index of the row at content position `y` (-1 when none). */
export function rowAt(layout: Layout, y: number): number {
  const { rows } = layout;
  let lo = 0;
  let hi = rows.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const row = rows[mid] as Row;
    if (row.y <= y) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  if (found < 0) return -1;
  const row = rows[found] as Row;
  return y < row.y + row.height ? found : -1;
}

/** The indices [first, last) of the rows that intersect content range [top, bottom). */
export function visibleRange(layout: Layout, top: number, bottom: number): [number, number] {
  const { rows } = layout;
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const row = rows[mid] as Row;
    if (row.y + row.height <= top) lo = mid + 1;
    else hi = mid;
  }
  let end = lo;
  while (end < rows.length && (rows[end] as Row).y < bottom) end++;
  return [lo, end];
}

/**
 * The row where an event of (pid, tid, depth) is drawn: its track row, or its process header
 * when the process is collapsed (null if the layout does not know the process).
 */
export function rowOfEvent(layout: Layout, pid: number, tid: number, depth: number): Row | null {
  const track = layout.trackIndex.get(`${pid}:${tid}:${depth}`);
  if (track !== undefined) return layout.rows[track] ?? null;
  const header = layout.processIndex.get(pid);
  return header !== undefined ? (layout.rows[header] ?? null) : null;
}
