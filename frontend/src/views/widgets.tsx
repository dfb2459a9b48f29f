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

/** Levels at which the banner states the input level under its headline. */
const STATED_LEVELS: ReadonlySet<Bottleneck["input_bound"]> = new Set([
  "highly",
  "moderately",
  "potentially",
]);

/**
 * The bottleneck verdict: its headline says what bounds the step ("Bounded by device compute
 * (93.6 %)"), a line under it the input level where the page calls the run input-bound, then
 * the server's statement (as text). Coloured by the stated level; hooks `<testid>` with
 * `data-level` (the reference's level), `data-stated-level` and `data-bound`,
 * `<testid>-headline`, `<testid>-level`, `<testid>-statement`.
 */
export function Verdict({ bottleneck, testid }: { bottleneck: Bottleneck; testid: string }) {
  const stated = bottleneck.stated_level;
  const headline = bottleneck.headline;
  return (
    <section
      class={`verdict verdict-${stated}`}
      data-testid={testid}
      data-level={bottleneck.input_bound}
      data-stated-level={stated}
      data-bound={bottleneck.bound_by}
      aria-label="Verdict"
    >
      <h3
        class={headline ? "verdict-title verdict-headline" : "verdict-title"}
        data-testid={`${testid}-headline`}
      >
        {headline || LEVEL_TITLES[stated]}
      </h3>
      {headline && STATED_LEVELS.has(stated) ? (
        <p class="verdict-level" data-testid={`${testid}-level`}>
          {LEVEL_TITLES[stated]}
        </p>
      ) : null}
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
      The diagnostics below say why and how to mark steps.
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
