/** The left sidebar: the tab's title, the run/view/host selectors, refresh and capture. */
import { useRef } from "preact/hooks";
import type { Fetched } from "../hooks";
import { fitMiddle, middleCut, useBoxWidth } from "./middle_text";
import { plural } from "../views/format";
import { viewLabel } from "../views/view_names";
import { CaptureButton } from "./capture_dialog";

export const ALL_HOSTS = "ALL_HOSTS";

interface SelectorProps {
  readonly id: string;
  readonly label: string;
  readonly testid: string;
  readonly options: Fetched<readonly string[]>;
  readonly value: string | null;
  readonly optionLabel?: (value: string) => string;
  readonly onChange: (value: string) => void;
}

/** A host as the selectors show it (ALL_HOSTS reads "All hosts"). */
export function hostLabel(host: string): string {
  return host === ALL_HOSTS ? "All hosts" : host;
}

/** Room the closed <select> keeps for its arrow (CSS px). */
const ARROW_PX = 24;

/**
 * A labelled <select>; a value missing from the options is still shown, as selected. Option
 * texts too long for the closed box are cut in the middle (a run keeps its session
 * timestamp); every option and the box carry the full text in `title`.
 */
function Selector({ id, label, testid, options, value, optionLabel, onChange }: SelectorProps) {
  const ref = useRef<HTMLSelectElement>(null);
  const box = useBoxWidth(ref);
  const fitted = (text: string): string =>
    box === null ? text : middleCut(text, fitMiddle(text, box.widthPx - ARROW_PX, box.measure));
  const values = options.state === "ok" ? [...options.data] : [];
  if (value !== null && !values.includes(value)) values.unshift(value);
  const placeholder =
    options.state === "loading"
      ? "Loading…"
      : options.state === "error"
        ? "Unavailable"
        : options.state === "idle"
          ? "—"
          : values.length === 0
            ? "None"
            : null;
  return (
    <div class="selector">
      <label for={id}>{label}</label>
      <select
        ref={ref}
        id={id}
        data-testid={testid}
        title={value ?? undefined}
        disabled={placeholder !== null}
        value={value ?? ""}
        onChange={(event) => onChange((event.currentTarget as HTMLSelectElement).value)}
      >
        {placeholder !== null ? <option value="">{placeholder}</option> : null}
        {values.map((item) => (
          <option value={item} key={item} title={item}>
            {fitted(optionLabel ? optionLabel(item) : item)}
          </option>
        ))}
      </select>
    </div>
  );
}

export interface SidebarProps {
  readonly runs: Fetched<readonly string[]>;
  readonly views: Fetched<readonly string[]>;
  readonly hosts: Fetched<readonly string[]>;
  readonly run: string | null;
  readonly view: string | null;
  readonly host: string | null;
  readonly onRun: (run: string) => void;
  readonly onView: (view: string) => void;
  readonly onHost: (host: string) => void;
  readonly onRefresh: () => void;
  readonly onCapture: () => void;
  /** Opens the Compare page (two runs side by side). */
  readonly onCompare?: () => void;
}

export function Sidebar(props: SidebarProps) {
  const { runs } = props;
  return (
    <nav class="sidebar" aria-label="Profile selection">
      <h1 class="brand">Profile</h1>
      <Selector
        id="tbp-run"
        label="Run"
        testid="run-select"
        options={runs}
        value={props.run}
        onChange={props.onRun}
      />
      <Selector
        id="tbp-view"
        label="Tools"
        testid="view-select"
        options={props.views}
        value={props.view}
        optionLabel={viewLabel}
        onChange={props.onView}
      />
      <Selector
        id="tbp-host"
        label="Hosts"
        testid="host-select"
        options={props.hosts}
        value={props.host}
        optionLabel={hostLabel}
        onChange={props.onHost}
      />
      <div class="sidebar-actions">
        <button type="button" data-testid="refresh-button" onClick={props.onRefresh}>
          Refresh
        </button>
        <CaptureButton onClick={props.onCapture} />
        {props.onCompare ? (
          <button type="button" data-testid="compare-button" onClick={props.onCompare}>
            Compare
          </button>
        ) : null}
      </div>
      {runs.state === "ok" ? (
        <p class="sidebar-footnote">
          {plural(runs.data.length, "run")}
        </p>
      ) : null}
    </nav>
  );
}
