/**
 * Which window of the trace to ask the server for, and the one-request-at-a-time loader.
 *
 * A request covers the view plus one view width on each side (3x the view, clamped to the
 * trace) at twice the screen's pixel density, so pans of up to a view width and zooms in of
 * up to 2x are served from what is loaded. A new request is needed only when the view leaves
 * the loaded window, or zooms in past the loaded resolution (a window that had nothing
 * filtered, `filtered_events` 0, serves any zoom inside it).
 *
 * The loader keeps at most one request in flight. Asking while one is in flight replaces the
 * queued request (latest wins); when the flight lands its answer is shown (it is near where
 * the user is, and better than stale data) and the queued one, if still needed, goes next.
 * Until then the drawing keeps showing the previous window: stale data, never a blank.
 */
import type { TimeView } from "./viewport";

/** Pixels of resolution per screen pixel in a request. */
export const OVERSAMPLE = 2;
/** The request spans the view plus this many view widths on each side. */
export const MARGIN_VIEWS = 1;

export interface WindowRequest {
  readonly startMs: number;
  readonly endMs: number;
  /** Pixels across the requested window (the server's `resolution`). */
  readonly resolution: number;
}

export interface LoadedCoverage {
  readonly windowMs: readonly [number, number];
  readonly resolution: number;
  readonly filteredEvents: number;
}

/** The window to request for `view` shown across `widthPx` (µs times, ms in the request). */
export function requestFor(view: TimeView, widthPx: number, fullUs: number): WindowRequest {
  const spanUs = Math.max(view.endUs - view.startUs, 1e-9);
  const startUs = Math.max(0, view.startUs - MARGIN_VIEWS * spanUs);
  const endUs = Math.min(fullUs, view.endUs + MARGIN_VIEWS * spanUs);
  const windowUs = Math.max(endUs - startUs, 0);
  const resolution = Math.max(1, Math.round((OVERSAMPLE * widthPx * windowUs) / spanUs));
  return { startMs: startUs / 1000, endMs: endUs / 1000, resolution };
}

/**
 * Whether what is loaded can draw `view` across `widthPx` faithfully: the loaded window
 * holds the part of the view inside the trace, and its resolution is at least one pixel per
 * screen pixel (or nothing in it was filtered).
 */
export function covers(
  loaded: LoadedCoverage,
  view: TimeView,
  widthPx: number,
  fullUs: number,
): boolean {
  const [aMs, bMs] = loaded.windowMs;
  const needStartUs = Math.max(0, view.startUs);
  const needEndUs = Math.min(fullUs, view.endUs);
  // A tolerance of a nanosecond for the ms <-> µs round trip.
  if (needStartUs < aMs * 1000 - 1e-3 || needEndUs > bMs * 1000 + 1e-3) return false;
  if (loaded.filteredEvents === 0 || loaded.resolution <= 0) return true;
  const loadedPxPerUs = loaded.resolution / Math.max((bMs - aMs) * 1000, 1e-9);
  const neededPxPerUs = widthPx / Math.max(view.endUs - view.startUs, 1e-9);
  return loadedPxPerUs >= neededPxPerUs * 0.999;
}

export type Fetcher<T> = (request: WindowRequest) => Promise<T>;

/** One request in flight at most; the latest ask wins the queue. */
export class WindowLoader<T> {
  private inFlight: WindowRequest | null = null;
  private queued: WindowRequest | null = null;
  /** True while an answer is delivered: asks made then are queued, sent right after. */
  private landing = false;
  /** The last request answered (or failed): never asked again in a row. */
  private answered: WindowRequest | null = null;
  private disposed = false;
  /** How many requests were sent (a test hook reads it). */
  requests = 0;

  constructor(
    private readonly fetcher: Fetcher<T>,
    private readonly onLoaded: (data: T, request: WindowRequest) => void,
    private readonly onError: (error: unknown) => void,
    private readonly onBusy: (busy: boolean) => void,
  ) {}

  get busy(): boolean {
    return this.inFlight !== null;
  }

  /** Asks for `request`; sent now if nothing is in flight, else queued (replacing any queued). */
  ask(request: WindowRequest): void {
    if (this.disposed) return;
    if (this.answered !== null && sameRequest(this.answered, request)) {
      this.queued = null;
      return;
    }
    if (this.inFlight !== null || this.landing) {
      if (this.inFlight === null || !sameRequest(this.inFlight, request)) this.queued = request;
      else this.queued = null;
      return;
    }
    this.send(request);
  }

  /** Drops the queued request (the view came back inside what is loaded). */
  cancelQueued(): void {
    this.queued = null;
  }

  dispose(): void {
    this.disposed = true;
    this.queued = null;
  }

  private send(request: WindowRequest): void {
    this.inFlight = request;
    this.requests += 1;
    this.onBusy(true);
    this.fetcher(request).then(
      (data) => this.land(() => this.onLoaded(data, request)),
      (error: unknown) => this.land(() => this.onError(error)),
    );
  }

  private land(deliver: () => void): void {
    this.answered = this.inFlight;
    this.inFlight = null;
    if (this.disposed) return;
    this.landing = true;
    try {
      deliver();
    } finally {
      this.landing = false;
    }
    const next = this.queued;
    this.queued = null;
    if (next !== null) this.send(next);
    else this.onBusy(false);
  }
}

function sameRequest(a: WindowRequest, b: WindowRequest): boolean {
  return a.startMs === b.startMs && a.endMs === b.endMs && a.resolution === b.resolution;
}
