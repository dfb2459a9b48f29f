/**
 * The search box: finds events by name across the whole profile (the `trace_search` route),
 * not only the loaded window.
 *
 * Enter or "Next" goes to the next match, shift+Enter or "Previous" to the previous one; both
 * wrap around at the ends. A new query starts where the user is looking: at the first match
 * that starts at or after the view's start (the route's `from_us`; matches are in time
 * order), or going backwards at the last match before it. The status says "k of N".
 * Each match is handed to the timeline, which pans and zooms to it (`matchView`: the event
 * with a margin as long as itself on each side, widened to show its enclosing event, the
 * route's `parent`, up to CONTEXT_LIMIT times the event's length), expands its process,
 * scrolls its row into view and selects it; the keyboard focus then goes back to the
 * timeline, so W/A/S/D move around the match at once (click the box to search again).
 *
 * Hooks: trace-search (the input), trace-search-prev, trace-search-next, trace-search-status
 * ("3 of 120", with data-index (0-based) and data-total; "No match").
 */
import { useRef, useState } from "preact/hooks";
import { ApiError, getJson, routeUrl } from "../../api";
import { num, record, str } from "../format";
import type { PlacedEvent } from "./draw";
import type { TimeView } from "./viewport";

/** A match's view is at most this many times its own length (at least 1 µs) wide. */
export const CONTEXT_LIMIT = 100;

/** The time range shown around a search match (µs): the match with a margin of its own
 * length on each side (so it fills the middle third), widened to its parent plus a tenth of
 * the parent's length on each side, but never wider than CONTEXT_LIMIT times the match's
 * length (at least 1 µs): a 5 µs op in a 40 ms step shows 500 µs around it, not the step. */
export function matchView(
  startUs: number,
  durationUs: number,
  parent: { readonly startUs: number; readonly durationUs: number } | null,
): TimeView {
  const length = Math.max(durationUs, 1);
  let lo = startUs - length;
  let hi = startUs + durationUs + length;
  if (parent !== null) {
    lo = Math.min(lo, parent.startUs - parent.durationUs / 10);
    hi = Math.max(hi, parent.startUs + parent.durationUs * 1.1);
  }
  const limit = CONTEXT_LIMIT * length;
  if (hi - lo <= limit) return { startUs: lo, endUs: hi };
  // Too wide: CONTEXT_LIMIT lengths centred on the match, kept inside the wanted range.
  const centre = startUs + durationUs / 2;
  const start = Math.min(Math.max(centre - limit / 2, lo), hi - limit);
  return { startUs: start, endUs: start + limit };
}

interface SearchState {
  readonly query: string;
  readonly total: number;
  readonly index: number;
}

interface SearchProps {
  readonly run: string;
  readonly host: string;
  /** The start of the visible time range (µs from the trace origin). */
  readonly viewStartUs: () => number;
  /** Shows a match: pans and zooms the timeline to `view`, selects the event. */
  readonly onMatch: (event: PlacedEvent, view: TimeView) => void;
  /** Gives the keyboard focus back to the timeline (after a match was chosen). */
  readonly onChosen: () => void;
}

export function SearchBox({ run, host, viewStartUs, onMatch, onChosen }: SearchProps) {
  const [text, setText] = useState("");
  const [state, setState] = useState<SearchState | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const latest = useRef(0);

  const go = async (delta: number): Promise<void> => {
    const query = text.trim();
    if (!query) return;
    const ticket = ++latest.current;
    setBusy(true);
    setError(null);
    const ask = async (params: Record<string, string>) =>
      record(await getJson<unknown>(routeUrl("trace_search", { run, host, q: query, ...params })));
    try {
      let answer: Record<string, unknown>;
      if (state !== null && state.query === query && state.total > 0) {
        const index = (((state.index + delta) % state.total) + state.total) % state.total;
        answer = await ask({ index: String(index) });
      } else {
        // A new query: the first match at or after the view's start (the last one if none).
        const fromUs = Math.max(0, viewStartUs());
        answer = await ask({ from_us: String(fromUs) });
        const total = num(answer["total_matches"]) ?? 0;
        const at = num(answer["index"]) ?? 0;
        const match = record(answer["match"]);
        const startsAfter = (num(match["start_us"]) ?? 0) >= fromUs;
        // Backwards: the last match before the view's start (wrapping to the last of all).
        if (delta < 0 && total > 1 && startsAfter)
          answer = await ask({ index: String((at - 1 + total) % total) });
      }
      const total = num(answer["total_matches"]) ?? 0;
      if (ticket !== latest.current) return;
      const match = answer["match"];
      const shown = num(answer["index"]) ?? 0;
      setState({ query, total, index: shown });
      if (match !== null && typeof match === "object") {
        const m = record(match);
        const startUs = num(m["start_us"]) ?? 0;
        const durationUs = num(m["duration_us"]) ?? 0;
        const p = m["parent"] !== null && typeof m["parent"] === "object" ? record(m["parent"]) : null;
        const parent = p === null ? null : { startUs: num(p["start_us"]) ?? 0, durationUs: num(p["duration_us"]) ?? 0 };
        onMatch(
          {
            id: num(m["id"]) ?? -1,
            name: str(m["name"]),
            pid: num(m["pid"]) ?? 0,
            tid: num(m["tid"]) ?? 0,
            depth: num(m["depth"]) ?? 0,
            startUs,
            durationUs,
          },
          matchView(startUs, durationUs, parent),
        );
        onChosen();
      }
    } catch (caught) {
      if (ticket !== latest.current) return;
      setError(caught instanceof ApiError || caught instanceof Error ? caught.message : String(caught));
    } finally {
      if (ticket === latest.current) setBusy(false);
    }
  };

  const status =
    error !== null
      ? error
      : state === null
        ? ""
        : state.total === 0
          ? "No match"
          : `${state.index + 1} of ${state.total}`;
  return (
    <form
      class="trace-search"
      role="search"
      onSubmit={(event) => {
        event.preventDefault();
        void go(1);
      }}
    >
      <input
        type="search"
        data-testid="trace-search"
        placeholder="Search events by name"
        aria-label="Search events by name"
        value={text}
        onInput={(event) => setText((event.currentTarget as HTMLInputElement).value)}
        onKeyDown={(event) => {
          if (event.key === "Enter" && event.shiftKey) {
            event.preventDefault();
            void go(-1);
          }
        }}
      />
      <button type="button" data-testid="trace-search-prev" title="Previous match (shift+Enter)" onClick={() => void go(-1)}>
        ‹
      </button>
      <button type="submit" data-testid="trace-search-next" title="Next match (Enter)">
        ›
      </button>
      <span
        class={`trace-search-status${error !== null ? " error-text" : ""}`}
        data-testid="trace-search-status"
        data-index={state !== null ? String(state.index) : undefined}
        data-total={state !== null ? String(state.total) : undefined}
        aria-live="polite"
      >
        {busy ? "Searching…" : status}
      </span>
    </form>
  );
}
