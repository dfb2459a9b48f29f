/**
 * The Profile tab: a sidebar of selectors and the main area that shows one view document.
 *
 * The selection resolves top-down, one route at a time (docs/api.md):
 *   runs -> run (requested, else the newest) -> run_tools -> view (requested when the run
 *   has it, else the first) -> hosts -> host (requested when listed, else the first) -> data.
 * The resolved selection is written back to the URL (replace); a choice by the user is a new
 * history entry (push). A requested run is never second-guessed: the server's answer for it
 * (for instance 404 "unknown run") is shown, so a stale link explains itself.
 */
import { useEffect, useMemo, useState } from "preact/hooks";
import { routeUrl } from "./api";
import { ALL_HOSTS, Sidebar } from "./components/sidebar";
import {
  EmptyState,
  ErrorMessage,
  Loading,
  Notice,
  ViewErrorBoundary,
} from "./components/states";
import { useJson, type Fetched } from "./hooks";
import { sameSelection, type Selection, type SelectionStore } from "./location";
import { rendererFor, viewLabel } from "./views/registry";
import type { ViewDocument } from "./views/types";

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
  useEffect(() => store.subscribe(setRequested), [store]);

  const runs = useJson<readonly string[]>(routeUrl("runs"), reload);
  const runList = listOf(runs);
  const run = requested.run ?? runList?.[0] ?? null;

  const views = useJson<readonly string[]>(
    run !== null ? routeUrl("run_tools", { run }) : null,
    reload,
  );
  const view = pick(listOf(views), requested.view);

  const hosts = useJson<readonly string[]>(
    run !== null && view !== null ? routeUrl("hosts", { run, tag: view }) : null,
    reload,
  );
  const host = pick(listOf(hosts), requested.host);

  const doc = useJson<ViewDocument>(
    run !== null && view !== null && host !== null
      ? routeUrl("data", { run, tag: view, host })
      : null,
    reload,
  );

  // Keep the URL in step with what is shown (defaults filled in), without a history entry.
  const shown = useMemo<Selection>(
    () => ({
      run,
      view: view ?? requested.view,
      host: host ?? requested.host,
    }),
    [run, view, host, requested],
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
        view={view}
        host={host}
        onRun={(value) => choose({ run: value, view: shown.view, host: shown.host })}
        onView={(value) => choose({ run, view: value, host: shown.host })}
        onHost={(value) => choose({ run, view, host: value })}
        onRefresh={() => setReload((n) => n + 1)}
      />
      <main class="main" data-testid="view-root">
        <MainArea
          runs={runs}
          views={views}
          hosts={hosts}
          doc={doc}
          run={run}
          view={view}
          host={host}
          requestedView={requested.view}
        />
      </main>
    </div>
  );
}

interface MainAreaProps {
  readonly runs: Fetched<readonly string[]>;
  readonly views: Fetched<readonly string[]>;
  readonly hosts: Fetched<readonly string[]>;
  readonly doc: Fetched<ViewDocument>;
  readonly run: string | null;
  readonly view: string | null;
  readonly host: string | null;
  readonly requestedView: string | null;
}

/** Whatever the main area shows: the first error, loading step or empty state, else the view. */
function MainArea(props: MainAreaProps) {
  const { runs, views, hosts, doc, run, view, host } = props;

  if (runs.state === "error") return <ErrorMessage title="Could not list runs" message={runs.error} />;
  if (runs.state === "ok" && runs.data.length === 0) return <EmptyState />;
  if (run === null) return <Loading what="runs" />;

  if (views.state === "error")
    return <ErrorMessage title={`Could not open run ${run}`} message={views.error} />;
  if (views.state !== "ok") return <Loading what="the run's tools" />;
  if (view === null)
    return (
      <Notice testid="no-views">
        Run <strong>{run}</strong> has no profile data that any view can show.
      </Notice>
    );

  if (hosts.state === "error")
    return <ErrorMessage title={`Could not list hosts for ${viewLabel(view)}`} message={hosts.error} />;
  if (hosts.state !== "ok") return <Loading what="hosts" />;
  if (host === null)
    return (
      <Notice testid="no-hosts">
        No host in run <strong>{run}</strong> has data for {viewLabel(view)}.
      </Notice>
    );

  if (doc.state === "error")
    return <ErrorMessage title={`Could not load ${viewLabel(view)}`} message={doc.error} />;
  if (doc.state !== "ok") return <Loading what={viewLabel(view)} />;

  const Renderer = rendererFor(view);
  const tool = typeof doc.data.tool === "string" ? doc.data.tool : view;
  const fallback =
    props.requestedView !== null && props.requestedView !== view ? props.requestedView : null;
  return (
    <article
      class="view"
      data-testid="view-document"
      data-tool={tool}
      data-run={run}
      data-host={host}
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
      </header>
      {fallback !== null ? (
        <Notice testid="selection-notice">
          Run {run} has no data for {viewLabel(fallback)}; showing {viewLabel(view)}.
        </Notice>
      ) : null}
      <ViewErrorBoundary key={`${run} ${view} ${host}`}>
        <Renderer doc={doc.data} run={run} view={view} host={host} />
      </ViewErrorBoundary>
    </article>
  );
}
