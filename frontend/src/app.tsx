/**
 * The Profile tab: a sidebar of selectors and the main area that shows one view document.
 *
 * The selection resolves top-down, one route at a time (docs/api.md):
 *   runs -> run (requested, else the newest) -> run_tools -> view (requested when the run
 *   has it, else the first) -> hosts -> host (requested when listed, else the first) -> data
 *   (with the view's parameters from the URL, e.g. include_idle).
 * The `hosts` route lists exactly the hosts the view has data for, so switching tools never
 * asks for a host the new view lacks: the view's first host is shown instead, with a notice
 * that names the hosts that have the view (hook `host-notice`).
 * The resolved selection is written back to the URL (replace); a choice by the user is a new
 * history entry (push). When only the view's parameters change, the view keeps showing its
 * current document (marked as updating) until the new one arrives, so it keeps its own state
 * (sort, filter, page). A requested run is never second-guessed: the server's answer for it
 * (for instance 404 "unknown run") is shown, so a stale link explains itself.
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { routeUrl } from "./api";
import { CaptureDialog } from "./components/capture_dialog";
import { HostsProgress } from "./components/hosts_progress";
import { ALL_HOSTS, hostLabel, Sidebar } from "./components/sidebar";
import {
  EmptyState,
  ErrorMessage,
  Loading,
  Notice,
  ViewErrorBoundary,
} from "./components/states";
import { useJson, type Fetched } from "./hooks";
import {
  NO_PARAMS,
  sameSelection,
  type Selection,
  type SelectionStore,
  type ViewParams,
} from "./location";
import { COMPARE_VIEW, ComparePage, compareSelection, compareToSelection } from "./views/compare";
import { dataParamsFor, paramsFor, rendererFor } from "./views/registry";
import type { ViewDocument } from "./views/types";
import { viewLabel } from "./views/view_names";

function listOf(fetched: Fetched<readonly string[]>): readonly string[] | null {
  return fetched.state === "ok" && Array.isArray(fetched.data) ? fetched.data : null;
}

/** `wanted` if the list has it, else the list's first entry (null while the list loads). */
function pick(list: readonly string[] | null, wanted: string | null): string | null {
  if (list === null) return null;
  return wanted !== null && list.includes(wanted) ? wanted : (list[0] ?? null);
}

export function App({ store }: { store: SelectionStore }) {
  const [requested, setRequested] = useState<Selection>(() => store.read());
  const [reload, setReload] = useState(0);
  const [captureOpen, setCaptureOpen] = useState(false);
  useEffect(() => store.subscribe(setRequested), [store]);

  const runs = useJson<readonly string[]>(routeUrl("runs"), reload);
  const runList = listOf(runs);
  const run = requested.run ?? runList?.[0] ?? null;

  const views = useJson<readonly string[]>(
    run !== null ? routeUrl("run_tools", { run }) : null,
    reload,
  );
  // The Compare page is not one of the run's views: no hosts or document of its own here.
  const comparing = requested.view === COMPARE_VIEW;
  const view = comparing ? null : pick(listOf(views), requested.view);

  const hosts = useJson<readonly string[]>(
    run !== null && view !== null ? routeUrl("hosts", { run, tag: view }) : null,
    reload,
  );
  const host = pick(listOf(hosts), requested.host);
  const params = useMemo(() => paramsFor(view, requested.params), [view, requested.params]);

  const doc = useJson<ViewDocument>(
    run !== null && view !== null && host !== null
      ? routeUrl("data", { run, tag: view, host, ...dataParamsFor(view, params) })
      : null,
    reload,
  );
  // The last document shown for this run, view and host (and refresh): shown, marked as
  // updating, while the same view loads with other parameters.
  const docKey = `${reload} ${run} ${view} ${host}`;
  const lastDoc = useRef<{ key: string; doc: ViewDocument } | null>(null);
  if (doc.state === "ok") lastDoc.current = { key: docKey, doc: doc.data };
  const staleDoc =
    doc.state === "loading" && lastDoc.current?.key === docKey ? lastDoc.current.doc : null;

  // Keep the URL in step with what is shown (defaults filled in), without a history entry.
  const shown = useMemo<Selection>(
    () => ({
      run,
      view: view ?? requested.view,
      host: host ?? requested.host,
      params: view !== null ? params : requested.params,
    }),
    [run, view, host, params, requested],
  );
  useEffect(() => {
    if (!sameSelection(shown, store.read())) store.write(shown, "replace");
  }, [shown, store]);

  const choose = (next: Selection): void => {
    store.write(next, "push");
    setRequested(next);
  };

  return (
    <div class="tbp-app" data-mode={store.mode}>
      <Sidebar
        runs={runs}
        views={views}
        hosts={hosts}
        run={run}
        view={comparing ? COMPARE_VIEW : view}
        host={host}
        onRun={(value) => choose({ ...shown, run: value })}
        onView={(value) => choose({ run, view: value, host: shown.host, params: NO_PARAMS })}
        onHost={(value) => choose({ run, view, host: value, params: shown.params })}
        onRefresh={() => setReload((n) => n + 1)}
        onCapture={() => setCaptureOpen(true)}
        onCompare={() => choose({ run, view: COMPARE_VIEW, host: null, params: NO_PARAMS })}
      />
      <main class="main" data-testid="view-root">
        {comparing ? (
          <ComparePage
            runs={runs}
            selection={compareSelection(run, requested.host, requested.params)}
            onSelect={(next) => choose(compareToSelection(next))}
          />
        ) : (
        <MainArea
          runs={runs}
          views={views}
          hosts={hosts}
          doc={doc}
          staleDoc={staleDoc}
          run={run}
          view={view}
          host={host}
          params={params}
          onParams={(next) => choose({ run, view, host, params: next })}
          onView={(next) => choose({ run, view: next, host: shown.host, params: NO_PARAMS })}
          requestedView={requested.view}
          requestedHost={requested.host}
          onCapture={() => setCaptureOpen(true)}
        />
        )}
      </main>
      <CaptureDialog
        open={captureOpen}
        onClose={() => setCaptureOpen(false)}
        onCaptured={(newRun) => {
          setReload((n) => n + 1);
          choose({ run: newRun, view: null, host: null, params: NO_PARAMS });
        }}
      />
    </div>
  );
}

interface MainAreaProps {
  readonly runs: Fetched<readonly string[]>;
  readonly views: Fetched<readonly string[]>;
  readonly hosts: Fetched<readonly string[]>;
  readonly doc: Fetched<ViewDocument>;
  /** The view's previous document while it loads with other parameters, else null. */
  readonly staleDoc: ViewDocument | null;
  readonly run: string | null;
  readonly view: string | null;
  readonly host: string | null;
  readonly params: ViewParams;
  readonly onParams: (params: ViewParams) => void;
  /** Switches to another view of the run (links between views, e.g. the verdicts'). */
  readonly onView: (view: string) => void;
  readonly requestedView: string | null;
  readonly requestedHost: string | null;
  readonly onCapture: () => void;
}

/** Whatever the main area shows: the first error, loading step or empty state, else the view. */
function MainArea(props: MainAreaProps) {
  const { runs, views, hosts, doc, run, view, host } = props;

  if (runs.state === "error") return <ErrorMessage title="Could not list runs" message={runs.error} />;
  if (runs.state === "ok" && runs.data.length === 0)
    return <EmptyState onCapture={props.onCapture} />;
  if (run === null) return <Loading what="runs" />;

  if (views.state === "error")
    return <ErrorMessage title={`Could not open run ${run}`} message={views.error} />;
  if (views.state !== "ok") return <HostsProgress run={run} what="the run's tools" />;
  if (view === null)
    return (
      <Notice testid="no-views">
        Run <strong>{run}</strong> has no profile data that any view can show.
      </Notice>
    );

  if (hosts.state === "error")
    return <ErrorMessage title={`Could not list hosts for ${viewLabel(view)}`} message={hosts.error} />;
  if (hosts.state !== "ok") return <HostsProgress run={run} what="hosts" />;
  if (host === null)
    return (
      <Notice testid="no-hosts">
        No host in run <strong>{run}</strong> has data for {viewLabel(view)}.
      </Notice>
    );

  if (doc.state === "error")
    return <ErrorMessage title={`Could not load ${viewLabel(view)}`} message={doc.error} />;
  const data = doc.state === "ok" ? doc.data : props.staleDoc;
  if (data === null) return <HostsProgress run={run} what={viewLabel(view)} />;
  const updating = doc.state !== "ok";

  const Renderer = rendererFor(view);
  const tool = typeof data.tool === "string" ? data.tool : view;
  const fallback =
    props.requestedView !== null && props.requestedView !== view ? props.requestedView : null;
  const hostList = listOf(hosts) ?? [];
  const missingHost =
    props.requestedHost !== null && props.requestedHost !== host &&
    !hostList.includes(props.requestedHost)
      ? props.requestedHost
      : null;
  return (
    <article
      class="view"
      data-testid="view-document"
      data-tool={tool}
      data-run={run}
      data-host={host}
      data-updating={updating ? "true" : undefined}
      aria-busy={updating ? "true" : undefined}
    >
      <header class="view-header">
        <h2>{viewLabel(view)}</h2>
        <p class="view-context">
          <span title="run">{run}</span>
          <span class="sep" aria-hidden="true">
            ·
          </span>
          <span title="host">{host === ALL_HOSTS ? "all hosts" : host}</span>
        </p>
        {updating ? (
          <span class="view-updating" data-testid="view-updating" role="status">
            <span class="spinner" aria-hidden="true" />
            Updating…
          </span>
        ) : null}
      </header>
      {fallback !== null ? (
        <Notice testid="selection-notice">
          Run {run} has no data for {viewLabel(fallback)}; showing {viewLabel(view)}.
        </Notice>
      ) : null}
      {missingHost !== null ? (
        <Notice testid="host-notice">
          {hostLabel(missingHost)} is not offered for {viewLabel(view)}; showing{" "}
          {hostLabel(host)}. {viewLabel(view)} has data for:{" "}
          <span data-testid="host-notice-hosts">{hostList.map(hostLabel).join(", ")}</span>.
        </Notice>
      ) : null}
      <ViewErrorBoundary key={`${run} ${view} ${host}`}>
        <Renderer
          doc={data}
          run={run}
          view={view}
          host={host}
          params={props.params}
          onParams={props.onParams}
          onView={props.onView}
        />
      </ViewErrorBoundary>
    </article>
  );
}
