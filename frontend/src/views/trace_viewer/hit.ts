/**
 * What is under the pointer: a process header, or the event of a track row nearest the time.
 *
 * An event is hit when the time is inside it, or within a few pixels of it (tiny events stay
 * clickable); among several, the one containing the time wins, then the nearest, then the
 * shortest. A density block (many events too small to draw one by one) is hit before the
 * events it stands for, so a click on it never picks one tiny event as if it were the block.
 */
import { eventName, firstVisible, rowKey, type TraceWindow } from "./data";
import type { DrawnBlock, PlacedEvent } from "./draw";
import { rowAt, type Layout, type Row } from "./layout";

/** How far from an event (CSS px) a click still selects it. */
export const HIT_SLOP_PX = 3;

export type Hit =
  | { readonly kind: "process"; readonly pid: number }
  | { readonly kind: "event"; readonly event: PlacedEvent }
  | { readonly kind: "block"; readonly block: DrawnBlock }
  | { readonly kind: "none" };

/** The event of `win` at index `i`, placed. */
export function placedAt(win: TraceWindow, i: number): PlacedEvent {
  return {
    id: win.id[i] ?? -1,
    name: eventName(win, i),
    pid: win.pid[i] ?? 0,
    tid: win.tid[i] ?? 0,
    depth: win.depth[i] ?? 0,
    startUs: win.startUs[i] ?? 0,
    durationUs: win.durationUs[i] ?? 0,
  };
}

/** The event of a track row at time `atUs`, with a slop of `slopUs` (null when none). */
export function eventAt(
  win: TraceWindow,
  row: Row & { kind: "track" },
  atUs: number,
  slopUs: number,
): PlacedEvent | null {
  const events = win.rows.get(rowKey(row.process.pid, row.thread.tid, row.depth));
  if (!events) return null;
  let best = -1;
  let bestDistance = Infinity;
  let bestDuration = Infinity;
  const { indices } = events;
  for (let k = firstVisible(win, events, atUs - slopUs); k < indices.length; k++) {
    const i = indices[k] as number;
    const start = win.startUs[i] as number;
    if (start > atUs + slopUs) break;
    const end = start + (win.durationUs[i] as number);
    const distance = atUs < start ? start - atUs : atUs > end ? atUs - end : 0;
    if (distance > slopUs) continue;
    const duration = end - start;
    if (distance < bestDistance || (distance === bestDistance && duration < bestDuration)) {
      best = i;
      bestDistance = distance;
      bestDuration = duration;
    }
  }
  return best < 0 ? null : placedAt(win, best);
}

/** The drawn density block at canvas position (x, y), within `slopPx` across; null if none. */
export function blockAt(
  blocks: readonly DrawnBlock[],
  x: number,
  y: number,
  slopPx: number,
): DrawnBlock | null {
  let best: DrawnBlock | null = null;
  let bestDistance = Infinity;
  for (const block of blocks) {
    if (y < block.y || y > block.y + block.h) continue;
    const distance = x < block.x ? block.x - x : x > block.x + block.w ? x - block.x - block.w : 0;
    if (distance <= slopPx && distance < bestDistance) {
      best = block;
      bestDistance = distance;
    }
  }
  return best;
}

/** What is at content position `contentY` and time `atUs`. */
export function hitTest(
  win: TraceWindow | null,
  layout: Layout,
  contentY: number,
  atUs: number,
  slopUs: number,
): Hit {
  const index = rowAt(layout, contentY);
  if (index < 0) return { kind: "none" };
  const row = layout.rows[index] as Row;
  if (row.kind === "process") return { kind: "process", pid: row.process.pid };
  if (win === null) return { kind: "none" };
  const event = eventAt(win, row, atUs, slopUs);
  return event === null ? { kind: "none" } : { kind: "event", event };
}
