/**
 * trace_viewer: every event of the profile on a Canvas2D timeline, one window at a time.
 *
 * The shell hands over the first document (the whole span at the server's default
 * resolution); from then on the timeline asks for windows itself (window_cache.ts) as the
 * user zooms and pans. Above the timeline: the search box, the measure-mode toggle, "Whole
 * trace", collapse/expand all, and the counts (events in the profile, loaded, filtered as
 * too small to see). Below: the details pane of the selected event. With ALL_HOSTS (runs
 * with several hosts) every host's processes share one time axis, named "<host>: <process>".
 * Controls: interaction.ts (and frontend/README.md).
 *
 * A big GPU capture's first document may come before the server made the GPUs' derived
 * tracks (`derived_pending`: its streams and threads alone): the page asks again every second
 * (backing off after a failed ask, stopping after 8 in a row with trace-derived-error) and,
 * once they are made, draws the timeline again with them, at the view the user is at.
 *
 * Hooks: trace-viewer (data-loading "true" while a window loads, data-derived-pending "true"
 * until the derived tracks are drawn, data-total-events),
 * trace-canvas, trace-scroller, trace-counts, trace-loading, trace-error, trace-derived-error,
 * trace-measure-mode (aria-pressed), trace-measure (data-duration-us), trace-reset,
 * trace-collapse-all, trace-expand-all, trace-empty, trace-hover (the note beside the pointer:
 * data-kind block/event/thread, data-count); search.tsx and details.tsx list theirs;
 * window.__tbTrace (test_hook.ts) reports what each frame drew.
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { getJson, routeUrl } from "../../api";
import { DiagnosticsPanel } from "../diagnostics";
import { formatCount } from "../format";
import { diagnosticsOf, type ViewDocument, type ViewProps } from "../types";
import { TraceController, type HoverInfo } from "./controller";
import { parseWindow, type TraceWindow } from "./data";
import { EventDetails } from "./details";
import type { PlacedEvent } from "./draw";
import { attachInteraction } from "./interaction";
import { SearchBox } from "./search";
import { formatDuration, type TimeView } from "./viewport";
import type { WindowRequest } from "./window_cache";

const VIEW = "trace_viewer";

function Counts({ win }: { win: TraceWindow }) {
  return (
    <span
      class="toolbar-note"
      data-testid="trace-counts"
      data-total-events={String(win.totalEvents)}
      data-returned-events={String(win.returnedEvents)}
      data-filtered-events={String(win.filteredEvents)}
    >
      {formatCount(win.totalEvents)} events; {formatCount(win.returnedEvents)} loaded
      {win.filteredEvents > 0 ? `, ${formatCount(win.filteredEvents)} too small to see` : ""}
    </span>
  );
}

/** The note beside the pointer: a block's event count, an event's name, a thread's name. */
function HoverNote({ hover }: { hover: HoverInfo }) {
  return (
    <div
      data-testid="trace-hover"
      data-kind={hover.kind}
      data-count={String(hover.count)}
      role="tooltip"
      style={{
        position: "absolute",
        left: `${hover.x + 14}px`,
        top: `${hover.y + 14}px`,
        maxWidth: "420px",
        padding: "3px 7px",
        background: "rgba(33, 33, 33, 0.92)",
        color: "#fff",
        font: "12px system-ui, sans-serif",
        borderRadius: "3px",
        pointerEvents: "none",
        overflowWrap: "anywhere",
        zIndex: 2,
      }}
    >
      {hover.text}
    </div>
  );
}

/**
 * The document the timeline starts from: the page's, and, while the server is still making
 * the GPUs' derived tracks (Steps, XLA Modules, op tracks: `derived_pending`, a big GPU
 * capture's first windows show its streams and threads alone), the whole-span window asked
 * again every DERIVED_POLL_MS: only the answer with the derived tracks replaces the document
 * (the timeline is made again once). A failed ask is tried again later, up to
 * DERIVED_POLL_FAILURES in a row; then `failed` says why.
 */
function useWholeDocument(
  pageDoc: ViewDocument,
  run: string,
  host: string,
): { doc: ViewDocument; failed: string | null } {
  const [doc, setDoc] = useState<ViewDocument>(pageDoc);
  const [asks, setAsks] = useState(0);
  const [failures, setFailures] = useState(0);
  const [failed, setFailed] = useState<string | null>(null);
  useEffect(() => {
    setDoc(pageDoc);
    setFailures(0);
    setFailed(null);
  }, [pageDoc]);
  useEffect(() => {
    if (!derivedPending(doc)) return undefined;
    if (failures >= DERIVED_POLL_FAILURES) return undefined;
    const abort = new AbortController();
    const timer = window.setTimeout(() => {
      getJson<ViewDocument>(routeUrl("data", { run, tag: VIEW, host }), abort.signal).then(
        (next) => {
          setFailures(0);
          if (derivedPending(next)) {
            setAsks((n) => n + 1); // still being made: ask again, the timeline left alone
          } else {
            setDoc(next);
          }
        },
        (error: unknown) => {
          if (abort.signal.aborted) return;
          setFailures((n) => n + 1);
          setFailed(
            `The derived tracks could not be fetched: ${
              error instanceof Error ? error.message : String(error)
            }`,
          );
        },
      );
    }, DERIVED_POLL_MS * 2 ** Math.min(failures, 4));
    return () => {
      window.clearTimeout(timer);
      abort.abort();
    };
  }, [doc, asks, failures, run, host]);
  return { doc, failed: failures >= DERIVED_POLL_FAILURES ? failed : null };
}

/** Whether the document says the GPUs' derived tracks are still being made. */
function derivedPending(doc: ViewDocument): boolean {
  return (doc as unknown as Record<string, unknown>)["derived_pending"] === true;
}

/** How often the page asks whether the derived tracks are made (useWholeDocument). */
const DERIVED_POLL_MS = 1000;
/** Failed asks in a row after which the page stops asking (and says why). */
const DERIVED_POLL_FAILURES = 8;

export function TraceViewer({ doc: pageDoc, run, host }: ViewProps) {
  const { doc, failed: derivedFailed } = useWholeDocument(pageDoc, run, host);
  const initial = useMemo(() => parseWindow(doc), [doc]);
  /** The view shown before the timeline was made again (the derived tracks came), kept. */
  const keptViewRef = useRef<{ run: string; host: string; view: TimeView } | null>(null);
  const scrollerRef = useRef<HTMLDivElement>(null);
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const spacerRef = useRef<HTMLDivElement>(null);
  const controllerRef = useRef<TraceController | null>(null);
  const measureModeRef = useRef(false);
  const [win, setWin] = useState<TraceWindow>(initial);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [selected, setSelected] = useState<PlacedEvent | null>(null);
  const [measure, setMeasure] = useState<TimeView | null>(null);
  const [measureMode, setMeasureMode] = useState(false);
  const [hover, setHover] = useState<HoverInfo | null>(null);
  const diagnostics = diagnosticsOf(doc);
  const empty = initial.processes.length === 0;

  useEffect(() => {
    const scroller = scrollerRef.current;
    const canvas = canvasRef.current;
    const spacer = spacerRef.current;
    if (scroller === null || canvas === null || spacer === null) return undefined;
    setWin(initial);
    const fetcher = async (request: WindowRequest, signal?: AbortSignal) => {
      const url = routeUrl("data", {
        run,
        tag: VIEW,
        host,
        start_time_ms: String(request.startMs),
        end_time_ms: String(request.endMs),
        resolution: String(request.resolution),
      });
      return { win: parseWindow(await getJson<unknown>(url, signal)), url };
    };
    const controller = new TraceController(
      scroller,
      canvas,
      spacer,
      initial,
      routeUrl("data", { run, tag: VIEW, host }),
      fetcher,
      {
        onSelect: setSelected,
        onBusy: setBusy,
        onWindow: (next) => {
          setWin(next);
          setError(null);
        },
        onError: setError,
        onMeasure: setMeasure,
        onHover: setHover,
      },
    );
    controllerRef.current = controller;
    const kept = keptViewRef.current;
    if (kept !== null && kept.run === run && kept.host === host) controller.setView(kept.view);
    const detach = attachInteraction(controller, scroller, canvas, {
      measureMode: () => measureModeRef.current,
    });
    // The keys (W/A/S/D, 0, Escape) work at once: the timeline has the focus from the start,
    // unless the user is already typing somewhere else on the page.
    const active = document.activeElement;
    if (active === null || active === document.body || active === scroller)
      scroller.focus({ preventScroll: true });
    return () => {
      keptViewRef.current = { run, host, view: controller.view };
      detach();
      controller.dispose();
      controllerRef.current = null;
    };
  }, [initial, run, host]);

  const toggleMeasureMode = (): void => {
    measureModeRef.current = !measureModeRef.current;
    setMeasureMode(measureModeRef.current);
  };
  const measuredUs = measure === null ? null : Math.abs(measure.endUs - measure.startUs);

  return (
    <div
      class="trace-viewer"
      data-testid="trace-viewer"
      data-loading={busy ? "true" : "false"}
      data-derived-pending={derivedPending(doc) ? "true" : "false"}
      data-total-events={String(win.totalEvents)}
    >
      <div class="view-toolbar trace-toolbar">
        <SearchBox
          run={run}
          host={host}
          viewStartUs={() => controllerRef.current?.view.startUs ?? 0}
          onMatch={(event, around) => controllerRef.current?.reveal(event, around)}
          onChosen={() => scrollerRef.current?.focus({ preventScroll: true })}
        />
        <button
          type="button"
          data-testid="trace-measure-mode"
          aria-pressed={measureMode ? "true" : "false"}
          class={measureMode ? "pressed" : undefined}
          title="Measure mode: drag to measure an interval (shift-drag measures in any mode)"
          onClick={toggleMeasureMode}
        >
          Measure
        </button>
        <button
          type="button"
          data-testid="trace-reset"
          title="Show the whole trace (key 0)"
          onClick={() => controllerRef.current?.resetView()}
        >
          Whole trace
        </button>
        <button
          type="button"
          data-testid="trace-collapse-all"
          onClick={() => controllerRef.current?.setAllCollapsed(true)}
        >
          Collapse all
        </button>
        <button
          type="button"
          data-testid="trace-expand-all"
          onClick={() => controllerRef.current?.setAllCollapsed(false)}
        >
          Expand all
        </button>
        {measuredUs !== null ? (
          <span
            class="trace-measure"
            data-testid="trace-measure"
            data-duration-us={String(measuredUs)}
          >
            Measured: {formatDuration(measuredUs)}
          </span>
        ) : null}
        <Counts win={win} />
        {busy ? (
          <span class="view-updating" data-testid="trace-loading" role="status">
            <span class="spinner" aria-hidden="true" />
            Loading window…
          </span>
        ) : null}
      </div>
      <p class="hint trace-help">
        Ctrl+wheel or W/S: zoom · drag, shift+wheel or A/D: pan · wheel: scroll rows ·
        shift+drag: measure · click: select (a hatched block of many small events: zoom into
        it) · 0: whole trace · keys act while the timeline has the focus (it has it on load;
        click it to give it back)
      </p>
      {error !== null ? (
        <p class="error-text trace-error" data-testid="trace-error" role="alert">
          Could not load this part of the trace: {error}
        </p>
      ) : null}
      {derivedFailed !== null ? (
        <p class="error-text trace-error" data-testid="trace-derived-error" role="alert">
          {derivedFailed} (the streams and host threads are shown; reload the page to try again)
        </p>
      ) : null}
      {empty ? (
        <p class="hint" data-testid="trace-empty">
          This profile has no events to show.
        </p>
      ) : null}
      <div style={{ position: "relative" }}>
        <div
          class="trace-scroller"
          data-testid="trace-scroller"
          ref={scrollerRef}
          tabIndex={0}
          aria-label="Trace timeline"
        >
          <canvas class="trace-canvas" data-testid="trace-canvas" ref={canvasRef} />
          <div ref={spacerRef} aria-hidden="true" />
        </div>
        {hover !== null ? <HoverNote hover={hover} /> : null}
      </div>
      <EventDetails
        run={run}
        host={host}
        selected={selected}
        onFlows={(flows) => controllerRef.current?.setFlows(flows)}
        onReveal={(event) => controllerRef.current?.reveal(event)}
      />
      <DiagnosticsPanel diagnostics={diagnostics} />
    </div>
  );
}
