/**
 * The details pane of the selected event: the `trace_event` route's answer, as text.
 *
 * Shows the name, long name, process and thread, start (ms from the trace origin), duration
 * and end, every stat (a table of key and value; values that are not strings are shown as
 * JSON), and the flow partners (kernel launch -> kernel, tf.data producer -> consumer), each
 * a button that reveals the partner. Once the answer arrives, its flows are handed to the
 * timeline as arrows. Everything from the profile is JSX text.
 *
 * Hooks: trace-details (data-event-id; data-state loading/ok/error), trace-detail-name,
 * trace-detail-long-name, trace-detail-process, trace-detail-thread, trace-detail-start-ms,
 * trace-detail-duration-us, trace-detail-end-ms, trace-stat (data-key) with
 * trace-stat-value, trace-flow (data-kind, data-direction, data-id), trace-details-empty.
 */
import { useEffect, useMemo } from "preact/hooks";
import { routeUrl } from "../../api";
import { useJson } from "../../hooks";
import { formatMs, list, num, record, str } from "../format";
import type { FlowArrow, PlacedEvent } from "./draw";
import { formatDuration } from "./viewport";

export interface EventFlow extends PlacedEvent {
  readonly kind: string;
  readonly direction: "in" | "out";
}

export interface EventDetail {
  readonly event: PlacedEvent;
  readonly longName: string;
  readonly process: string;
  readonly thread: string;
  readonly stats: readonly (readonly [string, string])[];
  readonly flows: readonly EventFlow[];
}

function placed(value: unknown): PlacedEvent {
  const r = record(value);
  return {
    id: num(r["id"]) ?? -1,
    name: str(r["name"]),
    pid: num(r["pid"]) ?? 0,
    tid: num(r["tid"]) ?? 0,
    depth: num(r["depth"]) ?? 0,
    startUs: num(r["start_us"]) ?? 0,
    durationUs: num(r["duration_us"]) ?? 0,
  };
}

function statText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** Parses a trace_event answer. */
export function parseDetail(doc: unknown): EventDetail {
  const r = record(doc);
  const event = record(r["event"]);
  return {
    event: placed(event),
    longName: str(event["long_name"]),
    process: str(event["process"]),
    thread: str(event["thread"]),
    stats: Object.entries(record(event["stats"])).map(([k, v]) => [k, statText(v)] as const),
    flows: list(r["flows"]).map((item) => {
      const f = record(item);
      return {
        ...placed(f),
        kind: str(f["kind"], "flow"),
        direction: str(f["direction"]) === "in" ? "in" : "out",
      };
    }),
  };
}

/** The arrows of a selected event's flows: from producer (launch) to consumer (kernel). */
export function flowArrows(selected: PlacedEvent, flows: readonly EventFlow[]): FlowArrow[] {
  return flows.map((flow) =>
    flow.direction === "out" ? { from: selected, to: flow } : { from: flow, to: selected },
  );
}

interface DetailsProps {
  readonly run: string;
  readonly host: string;
  readonly selected: PlacedEvent | null;
  readonly onFlows: (flows: readonly FlowArrow[]) => void;
  readonly onReveal: (event: PlacedEvent) => void;
}

function Field({ label, testid, value }: { label: string; testid: string; value: string }) {
  return (
    <div class="trace-field">
      <dt>{label}</dt>
      <dd data-testid={testid} title={value}>
        {value || "—"}
      </dd>
    </div>
  );
}

export function EventDetails({ run, host, selected, onFlows, onReveal }: DetailsProps) {
  const url =
    selected !== null && selected.id >= 0
      ? routeUrl("trace_event", { run, host, event_id: String(selected.id) })
      : null;
  const fetched = useJson<unknown>(url);
  const detail = useMemo(
    () => (fetched.state === "ok" ? parseDetail(fetched.data) : null),
    [fetched],
  );
  useEffect(() => {
    if (selected !== null && detail !== null) onFlows(flowArrows(selected, detail.flows));
  }, [detail]);

  if (selected === null)
    return (
      <section class="trace-details" data-testid="trace-details-empty">
        <p class="hint">Click an event to see its details; shift-drag to measure an interval.</p>
      </section>
    );
  const state = fetched.state === "ok" ? "ok" : fetched.state === "error" ? "error" : "loading";
  const event = detail?.event ?? selected;
  const endUs = event.startUs + event.durationUs;
  return (
    <section
      class="trace-details"
      data-testid="trace-details"
      data-event-id={String(selected.id)}
      data-state={state}
      aria-label="Selected event"
    >
      <h3 class="trace-details-title" data-testid="trace-detail-name" title={event.name}>
        {event.name}
      </h3>
      {fetched.state === "error" ? (
        <p class="error-text" data-testid="trace-details-error">
          {fetched.error}
        </p>
      ) : null}
      <div class="trace-details-body">
        <dl class="trace-fields">
          <Field label="Long name" testid="trace-detail-long-name" value={detail?.longName ?? ""} />
          <Field label="Process" testid="trace-detail-process" value={detail?.process ?? ""} />
          <Field label="Thread" testid="trace-detail-thread" value={detail?.thread ?? ""} />
          <Field
            label="Start (ms)"
            testid="trace-detail-start-ms"
            value={formatMs(event.startUs / 1000)}
          />
          <Field
            label="Duration (µs)"
            testid="trace-detail-duration-us"
            value={durationText(event.durationUs)}
          />
          <Field label="End (ms)" testid="trace-detail-end-ms" value={formatMs(endUs / 1000)} />
        </dl>
        {detail !== null && detail.stats.length > 0 ? (
          <table class="data-table trace-stats">
            <thead>
              <tr>
                <th scope="col">Stat</th>
                <th scope="col">Value</th>
              </tr>
            </thead>
            <tbody>
              {detail.stats.map(([key, value]) => (
                <tr key={key} data-testid="trace-stat" data-key={key}>
                  <td>{key}</td>
                  <td data-testid="trace-stat-value" class="trace-stat-value">
                    {value}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
        {detail !== null && detail.flows.length > 0 ? (
          <div class="trace-flows">
            <h4>Flows</h4>
            <ul>
              {detail.flows.map((flow, index) => (
                <li
                  key={`${index} ${flow.id}`}
                  data-testid="trace-flow"
                  data-kind={flow.kind}
                  data-direction={flow.direction}
                  data-id={String(flow.id)}
                >
                  <span class="trace-flow-kind">
                    {flow.kind} {flow.direction === "out" ? "→" : "←"}
                  </span>{" "}
                  <button type="button" class="link-button" onClick={() => onReveal(flow)}>
                    {flow.name || `event ${flow.id}`}
                  </button>{" "}
                  <span class="hint">
                    at {formatMs(flow.startUs / 1000)} ms, {formatDuration(flow.durationUs)}
                  </span>
                </li>
              ))}
            </ul>
          </div>
        ) : null}
      </div>
    </section>
  );
}

/** The duration in µs (3 decimals), and in a handier unit only where that says more
 * ("1234567.000 (1.235 s)", but "4.364", never "4.364 (4.364 µs)"). */
export function durationText(durationUs: number): string {
  const exact = durationUs.toFixed(3);
  const readable = formatDuration(durationUs);
  return readable.endsWith(" µs") ? exact : `${exact} (${readable})`;
}
