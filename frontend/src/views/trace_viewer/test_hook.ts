/**
 * `window.__tbTrace`: a small read-only snapshot of the trace viewer for browser tests.
 *
 * Rewritten after every frame and every loaded window; the page never reads it. Fields:
 *   frames            frames drawn since the viewer mounted
 *   frame_pending     a change (view, window, scroll...) waits for the next frame to be drawn
 *   last_frame_ms     the last frame's drawing time (performance.now() around drawFrame)
 *   frame_ms          the last (up to) 60 frames' drawing times, oldest first
 *   view_us           [start, end] of the visible time range (µs from the trace origin)
 *   track_width_px    CSS pixels across the track area
 *   drawn_rows        track rows drawn (inside the scrolled viewport, expanded processes)
 *   drawn_row_keys    those rows as "pid:tid:depth"
 *   drawn_events      events of the drawn rows overlapping the view
 *                     (start_us <= view end and start_us + duration_us >= view start)
 *   drawn_rects       rectangles filled after sub-pixel merging; drawn_texts names drawn
 *   targets           the widest drawn events: {id, name, x, y, w, h} in canvas CSS px
 *   drawn_blocks      density blocks drawn (hatched runs of events too small to draw one by
 *                     one); blocks: the widest 20, {row, x, y, w, h, count, start_us, end_us}
 *   drawn_boundaries  1-px boundaries drawn between touching bars of a row (two events, or
 *                     two runs of sub-pixel events under different events of the row above);
 *                     boundaries: the first 2000, {row, x} in canvas CSS px, by row then x
 *   ruler_labels      the time ruler's tick labels, left to right
 *   thread_labels     the thread labels drawn in the gutter: {name (full, id included),
 *                     label (readable: no long numeric id, alike names numbered 1, 2, ...),
 *                     shown (the label drawn, cut in the middle when too long), width (CSS px
 *                     of the text drawn),
 *                     y (canvas CSS px of the label's middle)}
 *   hover             what the hover note says: {kind: block|event|thread, count, text} or null
 *   loaded            the window drawn from: {url, window_ms, resolution, returned_events,
 *                     filtered_events, total_events, events_held}
 *   drawn_url         the URL of the window the last frame drew (equals loaded.url once the
 *                     frame after a load has been drawn)
 *   flow_arrows       flow arrows drawn for the selected event
 *   loading           whether a window the view needs is on its way; requests: how many
 *                     windows the view needed (sent for it, or prefetched and then used);
 *                     sent: how many of them were sent for it (no prefetch had them)
 *   prefetching       whether a prefetch is in flight; prefetches: how many were sent;
 *                     kept_windows: windows kept for reuse (window_cache.ts)
 *   selected_id       the selected event's id, or null
 *   measure_us        the measured interval [start, end] or null
 *   data_latency_ms   the last (up to) 60 waits for new data: from the input that moved the
 *                     view outside what the loaded windows can show to the end of the first
 *                     frame that draws a window covering it (performance.now() ms)
 */
import type { FrameStats } from "./draw";

export interface TraceHook {
  frames: number;
  frame_pending: boolean;
  last_frame_ms: number;
  frame_ms: number[];
  view_us: [number, number];
  track_width_px: number;
  drawn_rows: number;
  drawn_row_keys: string[];
  drawn_events: number;
  drawn_rects: number;
  drawn_texts: number;
  targets: FrameStats["targets"];
  drawn_blocks: number;
  blocks: {
    row: string;
    x: number;
    y: number;
    w: number;
    h: number;
    count: number;
    start_us: number;
    end_us: number;
  }[];
  drawn_boundaries: number;
  boundaries: { row: string; x: number }[];
  ruler_labels: string[];
  thread_labels: { name: string; label: string; shown: string; width: number; y: number }[];
  hover: { kind: string; count: number; text: string } | null;
  loaded: {
    url: string;
    window_ms: readonly [number, number];
    resolution: number;
    returned_events: number;
    filtered_events: number;
    total_events: number;
    events_held: number;
  } | null;
  drawn_url: string | null;
  flow_arrows: number;
  loading: boolean;
  requests: number;
  prefetching: boolean;
  prefetches: number;
  sent: number;
  kept_windows: number;
  selected_id: number | null;
  measure_us: [number, number] | null;
  data_latency_ms: number[];
}

declare global {
  interface Window {
    __tbTrace?: TraceHook;
  }
}

export function newHook(): TraceHook {
  return {
    frames: 0,
    frame_pending: false,
    last_frame_ms: 0,
    frame_ms: [],
    view_us: [0, 0],
    track_width_px: 0,
    drawn_rows: 0,
    drawn_row_keys: [],
    drawn_events: 0,
    drawn_rects: 0,
    drawn_texts: 0,
    targets: [],
    drawn_blocks: 0,
    blocks: [],
    drawn_boundaries: 0,
    boundaries: [],
    ruler_labels: [],
    thread_labels: [],
    hover: null,
    loaded: null,
    drawn_url: null,
    flow_arrows: 0,
    loading: false,
    requests: 0,
    prefetching: false,
    prefetches: 0,
    sent: 0,
    kept_windows: 0,
    selected_id: null,
    measure_us: null,
    data_latency_ms: [],
  };
}

/** Publishes `hook` as window.__tbTrace (a fresh frozen copy, so readers see one frame). */
export function publish(hook: TraceHook): void {
  window.__tbTrace = Object.freeze({ ...hook, frame_ms: [...hook.frame_ms], data_latency_ms: [...hook.data_latency_ms] }) as TraceHook;
}

/** Removes the hook (the viewer unmounted). */
export function unpublish(): void {
  delete window.__tbTrace;
}
