/**
 * Which window of the trace to ask the server for, and the one-request-at-a-time loader.
 *
 * A request covers the view plus one view width on each side (3x the view, clamped to the
 * trace) at twice the screen's pixel density, so pans of up to a view width and zooms in of
 * up to 2x are served from what is loaded. A new request is needed only when the view leaves
 * the loaded window, or zooms in past the loaded resolution (a window that had nothing
 * filtered, `filtered_events` 0, serves any zoom inside it).
 *
 * The loader keeps at most one request the view needs in flight. Asking while one is in
 * flight replaces the queued request (latest wins); when the flight lands its answer is shown
 * (it is near where the user is, and better than stale data) and the queued one, if still
 * needed, goes next. Until then the drawing keeps showing the previous window: stale data,
 * never a blank.
 *
 * Prefetch: while nothing is needed, the controller asks for the windows a next move is
 * likely to need (the whole view at 4x the density, so a zoom in about any point is there;
 * zoom in 4x about the pointer, zoom out 4x, a pan of two view widths either way;
 * `prefetchCandidates`), one at a time, and keeps the answers (`WindowStore`), so a zoom or
 * pan past the loaded window usually switches to a window already there instead of waiting
 * for the server.
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

/** Fetches a window; `signal` aborts it (a prefetch no longer worth its server time). */
export type Fetcher<T> = (request: WindowRequest, signal?: AbortSignal) => Promise<T>;

/** Whether the answer to `request` will draw `view` (not knowing yet whether it filters). */
export function requestServes(
  request: WindowRequest,
  view: TimeView,
  widthPx: number,
  fullUs: number,
): boolean {
  const coverage = {
    windowMs: [request.startMs, request.endMs] as const,
    resolution: request.resolution,
    filteredEvents: 1,
  };
  return covers(coverage, view, widthPx, fullUs);
}

export interface LoaderEvents<T> {
  /** A window the view asked for arrived (or a prefetched one it asked for meanwhile). */
  readonly onLoaded: (data: T, request: WindowRequest) => void;
  /** A prefetched window arrived that nothing asked for yet: keep it for later. */
  readonly onPrefetched: (data: T, request: WindowRequest) => void;
  readonly onError: (error: unknown) => void;
  /** Whether a window the view needs is on its way (prefetches do not count). */
  readonly onBusy: (busy: boolean) => void;
}

/**
 * One request the view needs in flight at most (the latest ask wins the queue), and beside
 * it at most one prefetch, sent only while nothing is needed. Asking for a window that a
 * prefetch in flight will also serve adopts that prefetch instead of sending another; asking
 * for one it will not serve aborts the prefetch first, so the server spends its time on what
 * the view needs (it stops a request whose client left).
 */
export class WindowLoader<T> {
  private inFlight: WindowRequest | null = null;
  private queued: WindowRequest | null = null;
  /** True while an answer is delivered: asks made then are queued, sent right after. */
  private landing = false;
  /** The last request answered (or failed): never asked again in a row. */
  private answered: WindowRequest | null = null;
  private prefetchInFlight: WindowRequest | null = null;
  private prefetchAbort: AbortController | null = null;
  /** The view asked for the window the prefetch in flight fetches. */
  private adopted = false;
  private disposed = false;
  /** Requests the view needed (sent, or a prefetch adopted); a test hook reads it. */
  requests = 0;
  /** Prefetch requests sent. */
  prefetches = 0;
  /** Requests the view needed that were sent (no prefetch was fetching them). */
  sent = 0;

  constructor(
    private readonly fetcher: Fetcher<T>,
    private readonly events: LoaderEvents<T>,
  ) {}

  get busy(): boolean {
    return this.inFlight !== null || this.adopted;
  }

  /** Whether a prefetch is in flight. */
  get prefetching(): boolean {
    return this.prefetchInFlight !== null;
  }

  /** Whether nothing is needed: a prefetch may go. */
  get idle(): boolean {
    return this.inFlight === null && this.queued === null && !this.adopted && !this.landing;
  }

  /**
   * Asks for `request`; sent now if nothing is in flight, else queued (replacing any queued).
   * `servedBy` says whether another request's answer would do as well (a prefetch in flight).
   */
  ask(request: WindowRequest, servedBy?: (other: WindowRequest) => boolean): void {
    if (this.disposed) return;
    if (this.answered !== null && sameRequest(this.answered, request)) {
      this.queued = null;
      return;
    }
    const prefetch = this.prefetchInFlight;
    if (
      prefetch !== null &&
      (sameRequest(prefetch, request) || (servedBy !== undefined && servedBy(prefetch)))
    ) {
      this.queued = null;
      if (!this.adopted) {
        this.adopted = true;
        this.requests += 1;
        this.events.onBusy(true);
      }
      return;
    }
    if (this.inFlight !== null || this.landing) {
      if (this.inFlight === null || !sameRequest(this.inFlight, request)) this.queued = request;
      else this.queued = null;
      return;
    }
    if (prefetch !== null && !this.adopted) this.prefetchAbort?.abort();
    this.send(request);
  }

  /** Prefetches `request` when nothing is needed and no prefetch is in flight; whether sent. */
  prefetch(request: WindowRequest): boolean {
    if (this.disposed || !this.idle || this.prefetchInFlight !== null) return false;
    this.prefetchInFlight = request;
    const abort = new AbortController();
    this.prefetchAbort = abort;
    this.prefetches += 1;
    this.fetcher(request, abort.signal).then(
      (data) => this.landPrefetch(data, request),
      () => this.landPrefetch(null, request),
    );
    return true;
  }

  /** Drops the queued request (the view came back inside what is loaded). */
  cancelQueued(): void {
    this.queued = null;
  }

  dispose(): void {
    this.disposed = true;
    this.queued = null;
    this.prefetchAbort?.abort();
  }

  private send(request: WindowRequest): void {
    this.inFlight = request;
    this.requests += 1;
    this.sent += 1;
    this.events.onBusy(true);
    this.fetcher(request).then(
      (data) => this.land(() => this.events.onLoaded(data, request)),
      (error: unknown) => this.land(() => this.events.onError(error)),
    );
  }

  private landPrefetch(data: T | null, request: WindowRequest): void {
    if (this.prefetchInFlight !== request) return; // an aborted one, already replaced
    this.prefetchInFlight = null;
    this.prefetchAbort = null;
    const adopted = this.adopted;
    this.adopted = false;
    if (this.disposed) return;
    if (adopted) {
      this.answered = request;
      this.landing = true;
      try {
        if (data !== null) this.events.onLoaded(data, request);
        else this.ask(request); // the prefetch failed: ask for real, errors shown
      } finally {
        this.landing = false;
      }
      this.afterLanding();
    } else if (data !== null) {
      this.events.onPrefetched(data, request);
    }
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
    this.afterLanding();
  }

  private afterLanding(): void {
    const next = this.queued;
    this.queued = null;
    if (next !== null) this.ask(next);
    if (!this.busy) this.events.onBusy(false);
  }
}

export function sameRequest(a: WindowRequest, b: WindowRequest): boolean {
  return a.startMs === b.startMs && a.endMs === b.endMs && a.resolution === b.resolution;
}

/** Zoom factor of the prefetched zoom-in and zoom-out levels. */
export const PREFETCH_ZOOM = 4;

/** A window worth prefetching: the request, and the view it is meant to show across
 * `showsPx` pixels (when a kept window already shows it so, the prefetch is not needed). */
export interface PrefetchCandidate {
  readonly request: WindowRequest;
  readonly shows: TimeView;
  readonly showsPx: number;
}

function zoomedAbout(view: TimeView, atUs: number, factor: number): TimeView {
  const span = view.endUs - view.startUs;
  const ratio = (atUs - view.startUs) / span;
  const newSpan = span / factor;
  return { startUs: atUs - ratio * newSpan, endUs: atUs + (1 - ratio) * newSpan };
}

/**
 * The windows to prefetch around `view`, most likely first:
 *
 * 1. the zoom-in level of the whole view: the view itself at PREFETCH_ZOOM times the pixel
 *    density of a normal request, so a zoom in of up to PREFETCH_ZOOM x (2 x that at one
 *    pixel per screen pixel) about ANY point of the view is served without a fetch, wherever
 *    the pointer goes next (a prefetch about the pointer missed zooms about a new point);
 * 2. zoomed in PREFETCH_ZOOM times about `atUs` (the pointer): a normal request, whose margins
 *    also serve the next zoom there;
 * 3. zoomed out as much about the centre, then panned by two view widths right and left (the
 *    loaded window already reaches one width either way).
 *
 * The zoom-in level asks for PREFETCH_ZOOM x OVERSAMPLE x `widthPx` pixels over one view
 * width: 8 / 6 of a normal request's 3 widths x 2 x `widthPx`, so its answer is about as big.
 */
export function prefetchCandidates(
  view: TimeView,
  atUs: number,
  widthPx: number,
  fullUs: number,
  clamp: (view: TimeView) => TimeView,
): PrefetchCandidate[] {
  const span = view.endUs - view.startUs;
  const inside = clamp(view);
  const level: WindowRequest = {
    startMs: Math.max(0, inside.startUs) / 1000,
    endMs: Math.min(fullUs, inside.endUs) / 1000,
    resolution: Math.max(1, Math.round(PREFETCH_ZOOM * OVERSAMPLE * widthPx)),
  };
  const centre = (view.startUs + view.endUs) / 2;
  const outSpan = span * PREFETCH_ZOOM;
  const views = [
    zoomedAbout(view, atUs, PREFETCH_ZOOM),
    { startUs: centre - outSpan / 2, endUs: centre + outSpan / 2 },
    { startUs: view.startUs + 2 * span, endUs: view.endUs + 2 * span },
    { startUs: view.startUs - 2 * span, endUs: view.endUs - 2 * span },
  ].map(clamp);
  return [
    // Shown at PREFETCH_ZOOM x the screen's pixels: any zoom in of up to that much inside it.
    { request: level, shows: inside, showsPx: PREFETCH_ZOOM * widthPx },
    ...views.map((next) => ({
      request: requestFor(next, widthPx, fullUs),
      shows: next,
      showsPx: widthPx,
    })),
  ];
}

/** The windows kept for reuse, least recently used first, at most `capacity`. */
export class WindowStore<T extends { readonly coverage: LoadedCoverage }> {
  private readonly items: T[] = [];

  constructor(private readonly capacity = 8) {}

  get size(): number {
    return this.items.length;
  }

  add(item: T): void {
    this.items.push(item);
    if (this.items.length > this.capacity) this.items.shift();
  }

  /**
   * The kept window that shows `view` with the fewest pixels per µs (the least to draw),
   * marked as just used; null when none does.
   */
  find(view: TimeView, widthPx: number, fullUs: number): T | null {
    let best: T | null = null;
    let bestDensity = Infinity;
    for (const item of this.items) {
      if (!covers(item.coverage, view, widthPx, fullUs)) continue;
      const [a, b] = item.coverage.windowMs;
      const density = item.coverage.resolution / Math.max((b - a) * 1000, 1e-9);
      if (density < bestDensity) {
        best = item;
        bestDensity = density;
      }
    }
    if (best !== null) {
      this.items.splice(this.items.indexOf(best), 1);
      this.items.push(best);
    }
    return best;
  }
}
