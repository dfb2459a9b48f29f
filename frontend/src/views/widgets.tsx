/** Building blocks the analysis views share: verdict banner, figure cards, CSV link, notices. */
import type { ComponentChildren } from "preact";
import { routeUrl } from "../api";
import type { Bottleneck } from "./step_time";

const LEVEL_TITLES: Readonly<Record<Bottleneck["input_bound"], string>> = {
  highly: "Highly input-bound",
  moderately: "Moderately input-bound",
  potentially: "Potentially input-bound",
  not: "Not input-bound",
  unknown: "Input-bound: unknown",
};

/**
 * The bottleneck verdict, coloured by level (hook `<testid>` with `data-level`).
 * The statement is the server's text, shown as text.
 */
export function Verdict({ bottleneck, testid }: { bottleneck: Bottleneck; testid: string }) {
  const level = bottleneck.input_bound;
  return (
    <section
      class={`verdict verdict-${level}`}
      data-testid={testid}
      data-level={level}
      aria-label="Verdict"
    >
      <h3 class="verdict-title">{LEVEL_TITLES[level]}</h3>
      <p class="verdict-statement" data-testid={`${testid}-statement`}>
        {bottleneck.statement || "The server gave no verdict statement."}
      </p>
    </section>
  );
}

/** One figure card: a title, a big figure and smaller lines under it. */
export function Card({
  title,
  testid,
  children,
}: {
  title: string;
  testid: string;
  children: ComponentChildren;
}) {
  return (
    <section class="card" data-testid={testid}>
      <h3 class="card-title">{title}</h3>
      {children}
    </section>
  );
}

/** A number with its testid, then its unit: `<span data-testid=...>64.100</span> ms`. */
export function Figure({
  testid,
  value,
  unit,
  big = false,
}: {
  testid: string;
  value: string;
  unit?: string;
  big?: boolean;
}) {
  return (
    <span class={big ? "figure figure-big" : "figure"}>
      <span class="figure-value" data-testid={testid}>
        {value}
      </span>
      {unit && value !== MISSING_FIGURE ? <span class="figure-unit"> {unit}</span> : null}
    </span>
  );
}

/** What a figure shows when there is no value: alone, without its unit ("—", not "— %"). */
export const MISSING_FIGURE = "—";

/**
 * "Download CSV": a link to one table of this view (`data_csv`), resolved like every route.
 * `params` are the view's parameters, so the file holds the rows the view shows.
 */
export function CsvLink({
  run,
  view,
  host,
  table,
  testid,
  params,
}: {
  run: string;
  view: string;
  host: string;
  table: string;
  testid: string;
  params?: Readonly<Record<string, string>>;
}) {
  return (
    <a
      class="csv-link"
      data-testid={testid}
      href={routeUrl("data_csv", { ...params, run, tag: view, host, table })}
      download
    >
      Download CSV
    </a>
  );
}

/** A section drawn from a view's document: the document, and the run, view and host it is of
 * (for its CSV link). */
export interface DocSectionProps {
  readonly doc: Readonly<Record<string, unknown>>;
  readonly run: string;
  readonly view: string;
  readonly host: string;
}

/** What a view shows instead of a chart when the profile has no steps. */
export function NoSteps() {
  return (
    <div class="state notice no-steps" data-testid="no-steps">
      <strong>No training steps were found in this profile</strong>, so there is no step-time chart.
      The diagnostics say why and how to mark steps.
    </div>
  );
}

/** A titled section of a view, with an optional link or control on the right of its title. */
export function Section({
  title,
  testid,
  aside,
  children,
}: {
  title: string;
  testid: string;
  aside?: ComponentChildren;
  children: ComponentChildren;
}) {
  return (
    <section class="panel" data-testid={testid}>
      <header class="panel-header">
        <h3>{title}</h3>
        {aside ? <div class="panel-aside">{aside}</div> : null}
      </header>
      {children}
    </section>
  );
}
