/**
 * Keeps the selection (run, view, host, and the view's parameters) in the URL, so a reload
 * and back/forward restore it.
 *
 * View parameters are the extra parameters of a view's `data` route (docs/api.md), e.g.
 * `include_idle=false` for tensorflow_stats. Only the names in PARAM_KEYS are read from a URL,
 * and only when they differ from the view's default does the app write them, so most URLs
 * stay `#run=...&view=...&host=...`.
 *
 * Standalone page (`data/plugin/profile/index.html`): the selection lives in the page's own
 * hash, `#run=...&view=...&host=...`, written with history.pushState (a choice by the user)
 * or replaceState (a default filled in by the app). Links can be shared; back/forward fire
 * `popstate`, which the app follows. `?run=...` query parameters are read too, for links.
 *
 * Inside TensorBoard: TensorBoard 2.21 shows the tab in an iframe whose address is
 * `data/plugin_entry.html?name=profile` (same origin as TensorBoard), and re-creates that
 * iframe from the same fixed address when the page reloads. So, measured in TB 2.21:
 *   - the iframe's own hash IS writable (history.pushState on the iframe's history), and
 *     back/forward walk through those entries (they join the tab's session history) and
 *     fire `popstate` in the iframe, but a reload of TensorBoard drops that hash;
 *   - therefore every write is also mirrored to sessionStorage (per browser tab, shared by
 *     TensorBoard and its iframes, survives reloads) and a fresh iframe restores from it;
 *   - a link into the tab can carry the selection in TensorBoard's own hash, the way TB's
 *     plugin API (`experimental.GetURLPluginData`) exposes plugin data:
 *     `#profile&p.profile.run=...&p.profile.view=...&p.profile.host=...`. It is read (never
 *     written: TensorBoard owns its URL) from the parent window, which is same-origin, when
 *     the iframe starts and whenever TensorBoard's hash changes.
 * Read order in the iframe: own hash, then TensorBoard's `p.profile.*`, then sessionStorage.
 */

/** A view's parameters for its `data` route, by name (values as they go in the URL). */
export type ViewParams = Readonly<Record<string, string>>;

export interface Selection {
  readonly run: string | null;
  readonly view: string | null;
  readonly host: string | null;
  readonly params: ViewParams;
}

export const NO_PARAMS: ViewParams = Object.freeze({});

export const EMPTY_SELECTION: Selection = { run: null, view: null, host: null, params: NO_PARAMS };

/** The view parameters a URL may carry (which view takes which: views/registry.ts). */
export const PARAM_KEYS = [
  "include_idle",
  "run_b",
  "host_b",
  "memory_id",
  "start_time_ms",
  "end_time_ms",
] as const;

export type HistoryMode = "push" | "replace";

export interface SelectionStore {
  /** "standalone" (own page) or "embedded" (TensorBoard's plugin iframe). */
  readonly mode: "standalone" | "embedded";
  read(): Selection;
  write(selection: Selection, history: HistoryMode): void;
  /** Calls `listener` on back/forward; returns the unsubscribe function. */
  subscribe(listener: (selection: Selection) => void): () => void;
}

const KEYS = ["run", "view", "host"] as const;
const STORAGE_KEY = "tb-profile.selection";
const PARENT_PREFIX = "p.profile.";

/** The known view parameters among `read(name)`'s answers (empty values left out). */
function pickParams(read: (name: string) => unknown): ViewParams {
  const picked: Record<string, string> = {};
  for (const key of PARAM_KEYS) {
    const value = read(key);
    if (typeof value === "string" && value !== "") picked[key] = value;
  }
  return Object.keys(picked).length ? picked : NO_PARAMS;
}

function fromParams(params: URLSearchParams, prefix = ""): Selection {
  const [run, view, host] = KEYS.map((key) => params.get(prefix + key) || null);
  return {
    run: run ?? null,
    view: view ?? null,
    host: host ?? null,
    params: pickParams((key) => params.get(prefix + key)),
  };
}

function isEmpty(selection: Selection): boolean {
  return KEYS.every((key) => selection[key] === null) && sameParams(selection.params, NO_PARAMS);
}

export function sameParams(a: ViewParams, b: ViewParams): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}

export function sameSelection(a: Selection, b: Selection): boolean {
  return KEYS.every((key) => a[key] === b[key]) && sameParams(a.params, b.params);
}

/** `#run=...&view=...&host=...[&include_idle=...]` (keys with no value are left out). */
export function toHash(selection: Selection): string {
  const params = new URLSearchParams();
  for (const key of KEYS) {
    const value = selection[key];
    if (value !== null) params.set(key, value);
  }
  for (const key of PARAM_KEYS) {
    const value = selection.params[key];
    if (value !== undefined) params.set(key, value);
  }
  const text = params.toString();
  return text ? `#${text}` : "";
}

function hashParams(location: Location): URLSearchParams {
  return new URLSearchParams(location.hash.replace(/^#/, ""));
}

function readStorage(win: Window): Selection {
  try {
    const raw = win.sessionStorage.getItem(STORAGE_KEY);
    if (!raw) return EMPTY_SELECTION;
    const value: unknown = JSON.parse(raw);
    if (value === null || typeof value !== "object") return EMPTY_SELECTION;
    const record = value as Record<string, unknown>;
    const pick = (key: string): string | null =>
      typeof record[key] === "string" && record[key] !== "" ? (record[key] as string) : null;
    const stored = record["params"];
    const params =
      stored !== null && typeof stored === "object"
        ? pickParams((key) => (stored as Record<string, unknown>)[key])
        : NO_PARAMS;
    return { run: pick("run"), view: pick("view"), host: pick("host"), params };
  } catch {
    return EMPTY_SELECTION; // storage disabled, or a value this code did not write
  }
}

function writeStorage(win: Window, selection: Selection): void {
  try {
    win.sessionStorage.setItem(STORAGE_KEY, JSON.stringify(selection));
  } catch {
    // Storage can be disabled (privacy settings); the hash still works until a reload.
  }
}

/** The parent window when it is same-origin (TensorBoard's page), else null. */
function parentIfReadable(win: Window): Window | null {
  try {
    void win.parent.location.href; // throws for a cross-origin parent
    return win.parent;
  } catch {
    return null;
  }
}

/** TensorBoard's own hash, `#profile&p.profile.run=...`, when the parent is readable. */
function readParent(win: Window): Selection {
  try {
    if (win.parent === win) return EMPTY_SELECTION;
    return fromParams(hashParams(win.parent.location), PARENT_PREFIX);
  } catch {
    return EMPTY_SELECTION; // cross-origin parent: not TensorBoard's iframe
  }
}

function writeHash(win: Window, selection: Selection, history: HistoryMode): void {
  // An absolute URL: inside TensorBoard the iframe's document has <base href="plugin/profile/">,
  // against which a bare "#..." would resolve to a different path.
  const url = new URL(win.location.href);
  url.hash = toHash(selection);
  if (url.href === win.location.href) return;
  if (history === "push") win.history.pushState(null, "", url.href);
  else win.history.replaceState(null, "", url.href);
}

export function createSelectionStore(win: Window = window): SelectionStore {
  const embedded = win.parent !== win;
  return {
    mode: embedded ? "embedded" : "standalone",
    read(): Selection {
      const own = fromParams(hashParams(win.location));
      if (!isEmpty(own)) return own;
      if (!embedded) return fromParams(new URLSearchParams(win.location.search));
      const parent = readParent(win);
      return isEmpty(parent) ? readStorage(win) : parent;
    },
    write(selection: Selection, history: HistoryMode): void {
      writeHash(win, selection, history);
      if (embedded) writeStorage(win, selection);
    },
    subscribe(listener: (selection: Selection) => void): () => void {
      const onPop = (): void => {
        const own = fromParams(hashParams(win.location));
        if (embedded) writeStorage(win, own);
        listener(own);
      };
      // A new `p.profile.*` link followed while the tab is open changes only TensorBoard's
      // hash (the iframe stays): follow it like a choice by the user.
      let parentSeen = embedded ? readParent(win) : EMPTY_SELECTION;
      const onParentHash = (): void => {
        const parent = readParent(win);
        if (isEmpty(parent) || sameSelection(parent, parentSeen)) return;
        parentSeen = parent;
        writeHash(win, parent, "push");
        writeStorage(win, parent);
        listener(parent);
      };
      win.addEventListener("popstate", onPop);
      const parentWindow = embedded ? parentIfReadable(win) : null;
      parentWindow?.addEventListener("hashchange", onParentHash);
      return () => {
        win.removeEventListener("popstate", onPop);
        parentWindow?.removeEventListener("hashchange", onParentHash);
      };
    },
  };
}
