/**
 * The timeline's state and its drawing loop, outside Preact: the visible time range, the
 * loaded window, collapse state, selection, flows and the measured interval.
 *
 * The canvas sits `position: sticky` at the top of a scrolling div whose spacer gives the
 * full height of all rows, so the browser scrolls rows natively (scrollbar, wheel, touch)
 * and the canvas draws the rows under scrollTop: only those are visited. Every change
 * schedules one frame (requestAnimationFrame); after a frame the controller checks that the
 * loaded window still covers the view and asks the loader for a new one when it does not,
 * drawing the stale window meanwhile.
 *
 * The canvas's backing store is devicePixelRatio times its CSS size, and the context is
 * scaled by that ratio, so everything is drawn in CSS pixels and stays sharp on HiDPI
 * screens (the ratio is re-read on every resize and when it changes, e.g. browser zoom).
 */
import type { TraceWindow } from "./data";
import {
  GUTTER_WIDTH_PX,
  RULER_HEIGHT_PX,
  drawFrame,
  type DrawnBlock,
  type FlowArrow,
  type PlacedEvent,
} from "./draw";
import { HIT_SLOP_PX, blockAt, hitTest, type Hit } from "./hit";
import { layoutRows, rowAt, rowOfEvent, type Layout } from "./layout";
import { newHook, publish, unpublish, type TraceHook } from "./test_hook";
import {
  clampView,
  formatDuration,
  fullView,
  panBy,
  timeAt,
  viewAround,
  zoomAt,
  type TimeView,
} from "./viewport";
import {
  WindowLoader,
  WindowStore,
  covers,
  prefetchCandidates,
  requestFor,
  requestServes,
  type LoadedCoverage,
  type WindowRequest,
} from "./window_cache";

export interface ControllerEvents {
  readonly onSelect: (event: PlacedEvent | null) => void;
  readonly onBusy: (busy: boolean) => void;
  readonly onWindow: (win: TraceWindow) => void;
  readonly onError: (message: string) => void;
  readonly onMeasure: (measure: TimeView | null) => void;
  /** What the pointer is over, for the hover note (null: nothing to say). */
  readonly onHover: (hover: HoverInfo | null) => void;
}

/** The hover note: where (canvas CSS px) and what. */
export interface HoverInfo {
  readonly x: number;
  readonly y: number;
  readonly kind: "block" | "event" | "thread";
  readonly text: string;
  /** Events under the pointer (a block's count; 1 for an event). */
  readonly count: number;
}

/** Boundaries between touching bars reported to the test hook (the first, left to right). */
const MAX_HOOK_BOUNDARIES = 2000;
/** The widest drawn blocks reported to the test hook. */
const MAX_HOOK_BLOCKS = 20;

export type WindowFetcher = (
  request: WindowRequest,
  signal?: AbortSignal,
) => Promise<{ win: TraceWindow; url: string }>;

const FRAME_HISTORY = 60;

interface Kept {
  readonly win: TraceWindow;
  readonly url: string;
  readonly coverage: LoadedCoverage;
}

function kept(win: TraceWindow, url: string): Kept {
  return {
    win,
    url,
    coverage: { windowMs: win.windowMs, resolution: win.resolution, filteredEvents: win.filteredEvents },
  };
}

export class TraceController {
  private readonly ctx: CanvasRenderingContext2D;
  private readonly loader: WindowLoader<{ win: TraceWindow; url: string }>;
  /** Windows loaded or prefetched, for reuse when the view leaves the shown one. */
  private readonly store = new WindowStore<Kept>();
  /** Switches to a kept window that had been prefetched (they count as requests). */
  private reused = 0;
  /** The density blocks of the last frame (hover and click find them here). */
  private drawnBlocks: readonly DrawnBlock[] = [];
  private hoverKey = "";
  /** The pointer's canvas x (CSS px), null when it is not over the timeline. */
  pointerX: number | null = null;
  private readonly resizeObserver: ResizeObserver;
  private readonly hook: TraceHook = newHook();
  private readonly fullUs: number;
  private win: TraceWindow;
  private collapsed = new Set<number>();
  private layoutCache: Layout;
  private viewValue: TimeView;
  private selectedValue: PlacedEvent | null = null;
  private flows: readonly FlowArrow[] = [];
  private measureValue: TimeView | null = null;
  private widthPx = 0;
  private heightPx = 0;
  private dpr = 1;
  private frameRequest = 0;
  private disposed = false;
  /** When the first input since the last frame changed the view (performance.now() ms). */
  private inputAt: number | null = null;
  /** The input that took the view out of the loaded window, while it is not yet covered. */
  private uncoveredSince: number | null = null;
  private readonly onScroll = (): void => {
    this.clearHover();
    this.schedule();
  };

  constructor(
    private readonly scroller: HTMLDivElement,
    private readonly canvas: HTMLCanvasElement,
    private readonly spacer: HTMLDivElement,
    initial: TraceWindow,
    initialUrl: string,
    fetcher: WindowFetcher,
    private readonly events: ControllerEvents,
  ) {
    const ctx = canvas.getContext("2d", { alpha: false });
    if (ctx === null) throw new Error("This browser cannot draw on a canvas (no 2D context).");
    this.ctx = ctx;
    this.win = initial;
    this.fullUs = Math.max(initial.fullSpanMs[1] * 1000, 0);
    this.viewValue = fullView(this.fullUs);
    this.layoutCache = layoutRows(initial.processes, this.collapsed);
    this.setLoaded(initial, initialUrl);
    this.store.add(kept(initial, initialUrl));
    this.loader = new WindowLoader(fetcher, {
      onLoaded: ({ win, url }) => {
        this.store.add(kept(win, url));
        this.show(win, url);
        this.schedule();
      },
      onPrefetched: ({ win, url }) => {
        this.store.add(kept(win, url));
        this.schedule();
      },
      onError: (error) => events.onError(error instanceof Error ? error.message : String(error)),
      onBusy: (busy) => {
        this.hook.loading = busy;
        this.hook.requests = this.loader.requests + this.reused;
        publish(this.hook);
        events.onBusy(busy);
      },
    });
    this.resizeObserver = new ResizeObserver(() => this.resize());
    this.resizeObserver.observe(scroller);
    scroller.addEventListener("scroll", this.onScroll, { passive: true });
    this.resize();
  }

  get view(): TimeView {
    return this.viewValue;
  }

  get layout(): Layout {
    return this.layoutCache;
  }

  get trackWidthPx(): number {
    return Math.max(1, this.widthPx - GUTTER_WIDTH_PX);
  }

  get measure(): TimeView | null {
    return this.measureValue;
  }

  get selected(): PlacedEvent | null {
    return this.selectedValue;
  }

  /** The time at canvas x position `x` (CSS px). */
  timeAtX(x: number): number {
    return timeAt(this.viewValue, this.trackWidthPx, x - GUTTER_WIDTH_PX);
  }

  /** What is at canvas position (x, y) (CSS px). */
  hitAt(x: number, y: number): Hit {
    if (y < RULER_HEIGHT_PX) return { kind: "none" };
    const contentY = y - RULER_HEIGHT_PX + this.scroller.scrollTop;
    if (x < GUTTER_WIDTH_PX) {
      const hit = hitTest(null, this.layoutCache, contentY, 0, 0);
      return hit.kind === "process" ? hit : { kind: "none" };
    }
    const block = blockAt(this.drawnBlocks, x, y, HIT_SLOP_PX);
    if (block !== null) return { kind: "block", block };
    const slopUs = (HIT_SLOP_PX * (this.viewValue.endUs - this.viewValue.startUs)) / this.trackWidthPx;
    return hitTest(this.win, this.layoutCache, contentY, this.timeAtX(x), slopUs);
  }

  /**
   * A click on a density block: zoom into it, selecting nothing. The view becomes the block
   * (with a margin of 5 %), or, for a block wider than a quarter of the view, a 4x zoom
   * about the click, so the events it stands for spread out.
   */
  zoomIntoBlock(block: DrawnBlock, x: number): void {
    const spanUs = block.endUs - block.startUs;
    const viewUs = this.viewValue.endUs - this.viewValue.startUs;
    if (spanUs * 1.1 > viewUs / 4) this.zoom(4, x);
    else this.setView({ startUs: block.startUs - spanUs * 0.05, endUs: block.endUs + spanUs * 0.05 });
  }

  /** Says what is under the pointer at canvas (x, y) (null: the pointer left). */
  hover(x: number | null, y: number): void {
    let info: HoverInfo | null = null;
    if (x !== null && y >= RULER_HEIGHT_PX) {
      const hit = this.hitAt(x, y);
      if (hit.kind === "block") {
        const { block } = hit;
        const count = block.count.toLocaleString("en-US");
        info = {
          x,
          y,
          kind: "block",
          count: block.count,
          text: `${count} events from ${formatDuration(block.startUs)} to ${formatDuration(block.endUs)} (${formatDuration(block.endUs - block.startUs)}), too small to draw one by one: click to zoom in`,
        };
      } else if (hit.kind === "event") {
        const e = hit.event;
        info = { x, y, kind: "event", count: 1, text: `${e.name} · ${formatDuration(e.durationUs)}` };
      } else if (x < GUTTER_WIDTH_PX) {
        const row = this.layoutCache.rows[rowAt(this.layoutCache, y - RULER_HEIGHT_PX + this.scroller.scrollTop)];
        if (row !== undefined && row.kind === "track")
          info = { x, y, kind: "thread", count: 0, text: `${row.process.name} / ${row.thread.name}` };
      }
    }
    const key = info === null ? "" : `${info.kind}:${info.text}:${Math.round(info.x)}:${Math.round(info.y)}`;
    if (key === this.hoverKey) return;
    this.hoverKey = key;
    this.hook.hover = info === null ? null : { kind: info.kind, count: info.count, text: info.text };
    publish(this.hook);
    this.events.onHover(info);
  }

  setView(view: TimeView): void {
    this.inputAt ??= performance.now();
    const next = clampView(view, this.fullUs);
    if (next.startUs !== this.viewValue.startUs || next.endUs !== this.viewValue.endUs)
      this.clearHover();
    this.viewValue = next;
    this.schedule();
  }

  /** Hides the hover note: what it described moved (a zoom, a pan, a scroll of the rows);
   * the next pointer move says what is under the pointer then. */
  clearHover(): void {
    if (this.hoverKey !== "") this.hover(null, 0);
  }

  /** Zooms by `factor` (> 1: in) about canvas x `x` (the centre when null). */
  zoom(factor: number, x: number | null): void {
    const at =
      x !== null && x >= GUTTER_WIDTH_PX
        ? this.timeAtX(x)
        : (this.viewValue.startUs + this.viewValue.endUs) / 2;
    this.setView(zoomAt(this.viewValue, factor, at, this.fullUs));
  }

  /** Pans by `dxPx` screen pixels (positive: later times come into view). */
  pan(dxPx: number): void {
    const usPerPx = (this.viewValue.endUs - this.viewValue.startUs) / this.trackWidthPx;
    this.setView(panBy(this.viewValue, dxPx * usPerPx, this.fullUs));
  }

  /** Shows the whole trace. */
  resetView(): void {
    this.setView(fullView(this.fullUs));
  }

  toggleProcess(pid: number): void {
    if (this.collapsed.has(pid)) this.collapsed.delete(pid);
    else this.collapsed.add(pid);
    this.relayout();
  }

  /** Collapses or expands every process. */
  setAllCollapsed(collapsed: boolean): void {
    this.collapsed = new Set(collapsed ? this.win.processes.map((p) => p.pid) : []);
    this.relayout();
  }

  select(event: PlacedEvent | null): void {
    this.selectedValue = event;
    this.flows = [];
    this.hook.selected_id = event?.id ?? null;
    this.events.onSelect(event);
    this.schedule();
  }

  /** The flow arrows of the selected event (from its details). */
  setFlows(flows: readonly FlowArrow[]): void {
    this.flows = flows;
    this.schedule();
  }

  setMeasure(measure: TimeView | null): void {
    this.measureValue = measure;
    this.hook.measure_us = measure === null ? null : [measure.startUs, measure.endUs];
    this.events.onMeasure(measure);
    this.schedule();
  }

  /** Pans and zooms to `event`, expands its process, scrolls its row into view, selects it. */
  /** Shows `event`: `around` (clamped to the trace; default: viewAround), its row, selected. */
  reveal(event: PlacedEvent, around?: TimeView): void {
    if (this.collapsed.delete(event.pid)) this.relayout();
    this.clearHover();
    this.viewValue =
      around === undefined
        ? viewAround(event.startUs, event.durationUs, this.fullUs)
        : clampView(around, this.fullUs);
    const row = rowOfEvent(this.layoutCache, event.pid, event.tid, event.depth);
    if (row !== null) {
      const visible = this.heightPx - RULER_HEIGHT_PX;
      const top = this.scroller.scrollTop;
      if (row.y < top || row.y + row.height > top + visible)
        this.scroller.scrollTop = Math.max(0, row.y - visible / 3);
    }
    this.select(event);
  }

  dispose(): void {
    this.disposed = true;
    this.loader.dispose();
    this.resizeObserver.disconnect();
    this.scroller.removeEventListener("scroll", this.onScroll);
    if (this.frameRequest) cancelAnimationFrame(this.frameRequest);
    unpublish();
  }

  schedule(): void {
    if (this.frameRequest || this.disposed) return;
    // Readers of the hook learn at once that what it shows is about to change.
    this.hook.frame_pending = true;
    publish(this.hook);
    this.frameRequest = requestAnimationFrame(() => {
      this.frameRequest = 0;
      this.frame();
    });
  }

  private relayout(): void {
    this.layoutCache = layoutRows(this.win.processes, this.collapsed);
    this.sizeSpacer();
    this.schedule();
  }

  private sizeSpacer(): void {
    const content = RULER_HEIGHT_PX + this.layoutCache.heightPx;
    this.spacer.style.height = `${Math.max(0, content - this.heightPx)}px`;
  }

  private resize(): void {
    const width = this.scroller.clientWidth;
    const height = this.scroller.clientHeight;
    const dpr = window.devicePixelRatio || 1;
    if (width === this.widthPx && height === this.heightPx && dpr === this.dpr) return;
    this.widthPx = width;
    this.heightPx = height;
    this.dpr = dpr;
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${height}px`;
    this.canvas.width = Math.max(1, Math.round(width * dpr));
    this.canvas.height = Math.max(1, Math.round(height * dpr));
    this.sizeSpacer();
    this.schedule();
  }

  private show(win: TraceWindow, url: string): void {
    this.win = win;
    this.setLoaded(win, url);
    this.events.onWindow(win);
  }

  private setLoaded(win: TraceWindow, url: string): void {
    this.hook.loaded = {
      url,
      window_ms: win.windowMs,
      resolution: win.resolution,
      returned_events: win.returnedEvents,
      filtered_events: win.filteredEvents,
      total_events: win.totalEvents,
      events_held: win.id.length,
    };
  }

  private frame(): void {
    if (this.disposed) return;
    if ((window.devicePixelRatio || 1) !== this.dpr) this.resize();
    if (this.widthPx <= 0 || this.heightPx <= 0) return;
    const started = performance.now();
    if (!this.coversView(this.win)) {
      // The view left the shown window: the wait for new data starts at the input.
      this.uncoveredSince ??= this.inputAt ?? started;
      // A kept window (loaded before, or prefetched) may show the view: switch at once.
      const reuse = this.store.find(this.viewValue, this.trackWidthPx, this.fullUs);
      if (reuse !== null) {
        this.reused += 1;
        this.show(reuse.win, reuse.url);
      }
    }
    this.ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    const stats = drawFrame(this.ctx, {
      widthPx: this.widthPx,
      heightPx: this.heightPx,
      view: this.viewValue,
      layout: this.layoutCache,
      scrollTop: this.scroller.scrollTop,
      win: this.win,
      selected: this.selectedValue,
      flows: this.flows,
      measure: this.measureValue,
    });
    const elapsed = performance.now() - started;
    const hook = this.hook;
    hook.frames += 1;
    hook.frame_pending = false;
    hook.last_frame_ms = elapsed;
    hook.frame_ms.push(elapsed);
    if (hook.frame_ms.length > FRAME_HISTORY) hook.frame_ms.shift();
    hook.view_us = [this.viewValue.startUs, this.viewValue.endUs];
    hook.track_width_px = this.trackWidthPx;
    hook.drawn_rows = stats.rows;
    hook.drawn_row_keys = stats.rowKeys;
    hook.drawn_events = stats.events;
    hook.drawn_rects = stats.rects;
    hook.drawn_texts = stats.texts;
    hook.targets = stats.targets;
    this.drawnBlocks = stats.blocks;
    hook.drawn_blocks = stats.blocks.length;
    hook.boundaries = stats.boundaries.slice(0, MAX_HOOK_BOUNDARIES).map((b) => ({ row: b.row, x: b.x }));
    hook.drawn_boundaries = stats.boundaries.length;
    hook.blocks = [...stats.blocks]
      .sort((a, b) => b.w - a.w)
      .slice(0, MAX_HOOK_BLOCKS)
      .map((b) => ({ row: b.row, x: b.x, y: b.y, w: b.w, h: b.h, count: b.count, start_us: b.startUs, end_us: b.endUs }));
    hook.ruler_labels = [...stats.rulerLabels];
    hook.thread_labels = [...stats.threadLabels];
    hook.drawn_url = hook.loaded?.url ?? null;
    hook.flow_arrows = stats.flows;
    const covered = this.ensureCoverage();
    const drawnAt = performance.now();
    if (covered && this.uncoveredSince !== null) {
      // New data drawn for a view the previous windows could not show: input -> this frame.
      hook.data_latency_ms.push(drawnAt - this.uncoveredSince);
      if (hook.data_latency_ms.length > FRAME_HISTORY) hook.data_latency_ms.shift();
      this.uncoveredSince = null;
    }
    this.inputAt = null;
    if (covered) this.prefetch();
    hook.requests = this.loader.requests + this.reused;
    hook.prefetches = this.loader.prefetches;
    hook.sent = this.loader.sent;
    hook.prefetching = this.loader.prefetching;
    hook.kept_windows = this.store.size;
    publish(hook);
  }

  private coversView(win: TraceWindow): boolean {
    const coverage = {
      windowMs: win.windowMs,
      resolution: win.resolution,
      filteredEvents: win.filteredEvents,
    };
    return covers(coverage, this.viewValue, this.trackWidthPx, this.fullUs);
  }

  /** Asks for a new window when the shown one does not cover the view; false then. */
  private ensureCoverage(): boolean {
    if (this.coversView(this.win)) {
      this.loader.cancelQueued();
      return true;
    }
    const view = this.viewValue;
    this.loader.ask(requestFor(view, this.trackWidthPx, this.fullUs), (other) =>
      requestServes(other, view, this.trackWidthPx, this.fullUs),
    );
    return false;
  }

  /** Prefetches the first likely next view that no kept window shows (one at a time). */
  private prefetch(): void {
    if (!this.loader.idle || this.loader.prefetching) return;
    const view = this.viewValue;
    const at =
      this.pointerX !== null && this.pointerX >= GUTTER_WIDTH_PX
        ? this.timeAtX(this.pointerX)
        : (view.startUs + view.endUs) / 2;
    const clamp = (next: TimeView) => clampView(next, this.fullUs);
    for (const candidate of prefetchCandidates(view, at, this.trackWidthPx, this.fullUs, clamp)) {
      if (this.store.find(candidate.shows, candidate.showsPx, this.fullUs) !== null) continue;
      this.loader.prefetch(candidate.request);
      return;
    }
  }
}
