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
import { GUTTER_WIDTH_PX, RULER_HEIGHT_PX, drawFrame, type FlowArrow, type PlacedEvent } from "./draw";
import { HIT_SLOP_PX, hitTest, type Hit } from "./hit";
import { layoutRows, rowOfEvent, type Layout } from "./layout";
import { newHook, publish, unpublish, type TraceHook } from "./test_hook";
import {
  clampView,
  fullView,
  panBy,
  timeAt,
  viewAround,
  zoomAt,
  type TimeView,
} from "./viewport";
import { WindowLoader, covers, requestFor, type WindowRequest } from "./window_cache";

export interface ControllerEvents {
  readonly onSelect: (event: PlacedEvent | null) => void;
  readonly onBusy: (busy: boolean) => void;
  readonly onWindow: (win: TraceWindow) => void;
  readonly onError: (message: string) => void;
  readonly onMeasure: (measure: TimeView | null) => void;
}

export type WindowFetcher = (request: WindowRequest) => Promise<{ win: TraceWindow; url: string }>;

const FRAME_HISTORY = 60;

export class TraceController {
  private readonly ctx: CanvasRenderingContext2D;
  private readonly loader: WindowLoader<{ win: TraceWindow; url: string }>;
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
  private readonly onScroll = (): void => this.schedule();

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
    this.loader = new WindowLoader(
      fetcher,
      ({ win, url }) => {
        this.win = win;
        this.setLoaded(win, url);
        events.onWindow(win);
        this.schedule();
      },
      (error) => events.onError(error instanceof Error ? error.message : String(error)),
      (busy) => {
        this.hook.loading = busy;
        this.hook.requests = this.loader.requests;
        publish(this.hook);
        events.onBusy(busy);
      },
    );
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
    const slopUs = (HIT_SLOP_PX * (this.viewValue.endUs - this.viewValue.startUs)) / this.trackWidthPx;
    return hitTest(this.win, this.layoutCache, contentY, this.timeAtX(x), slopUs);
  }

  setView(view: TimeView): void {
    this.viewValue = clampView(view, this.fullUs);
    this.schedule();
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
  reveal(event: PlacedEvent): void {
    if (this.collapsed.delete(event.pid)) this.relayout();
    this.viewValue = viewAround(event.startUs, event.durationUs, this.fullUs);
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
    hook.requests = this.loader.requests;
    hook.drawn_url = hook.loaded?.url ?? null;
    hook.flow_arrows = stats.flows;
    this.ensureCoverage();
    publish(hook);
  }

  /** Asks for a new window when the loaded one no longer covers the view. */
  private ensureCoverage(): void {
    const coverage = {
      windowMs: this.win.windowMs,
      resolution: this.win.resolution,
      filteredEvents: this.win.filteredEvents,
    };
    if (covers(coverage, this.viewValue, this.trackWidthPx, this.fullUs)) {
      this.loader.cancelQueued();
      return;
    }
    this.loader.ask(requestFor(this.viewValue, this.trackWidthPx, this.fullUs));
  }
}
