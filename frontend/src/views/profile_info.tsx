/**
 * profile_info: what a capture holds, as a page (docs/api.md, "profile_info").
 *
 * From the top: figure cards (hosts, events), the table of what each view needs and whether
 * this capture has it (with whether the run offers the view), then per host its producer
 * (framework, what showed it, the versions the profile records), capture window and time span,
 * its planes and its lines (event counts, begin, end and busy time in ms). Diagnostics with
 * errors or warnings come first, otherwise last. Every name is text from the profile.
 *
 * Hooks: profile-info-view, profile-info-host-count, profile-info-total-events,
 * view-needs-table with view-needs-row (data-view, data-has-data, data-offered) and cells
 * view-needs-row-{view,needs,found,has_data,offered}; profile-host (data-host) with
 * profile-host-framework, -evidence, -versions, -hostnames, -capture-ms, -span-ms; on PyTorch
 * hosts (`pytorch`) -pytorch-version, -pytorch-rank, -pytorch-world-size, -pytorch-backend,
 * -pytorch-nccl, -pytorch-devices;
 * tables planes-<host index> (rows plane-row, data-plane) and lines-<host index> (rows
 * line-row, data-line) with cells <row>-<column>; lines-csv.
 */
import { DataTable, type Column } from "../components/data_table";
import { DiagnosticsPanel } from "./diagnostics";
import { bool, formatCount, formatMs, list, num, record, str } from "./format";
import { diagnosticsOf, type ViewProps } from "./types";
import { viewLabel } from "./view_names";
import { Card, CsvLink, Figure, Section } from "./widgets";

interface ViewNeed {
  readonly view: string;
  readonly needs: string;
  readonly found: string;
  readonly has_data: boolean | null;
  readonly offered: boolean | null;
}

interface PlaneRow {
  readonly name: string;
  readonly id: number | null;
  readonly lines: number | null;
  readonly events: number | null;
  readonly event_metadata: number | null;
  readonly stat_names: readonly string[];
}

interface LineRow {
  readonly plane: string;
  readonly line: string;
  readonly line_id: number | null;
  readonly kind: string;
  readonly derived: boolean | null;
  readonly events: number | null;
  readonly begin_ms: number | null;
  readonly end_ms: number | null;
  readonly busy_ms: number | null;
}

const yesNo = (value: boolean | null): string => (value === null ? "—" : value ? "yes" : "no");

function needsOf(value: unknown): readonly ViewNeed[] {
  return list(value).map((item) => {
    const r = record(item);
    return {
      view: str(r["view"]),
      needs: str(r["needs"]),
      found: str(r["found"]),
      has_data: bool(r["has_data"]),
      offered: bool(r["offered"]),
    };
  });
}

function planesOf(value: unknown): readonly PlaneRow[] {
  return list(value).map((item) => {
    const r = record(item);
    return {
      name: str(r["name"]),
      id: num(r["id"]),
      lines: num(r["lines"]),
      events: num(r["events"]),
      event_metadata: num(r["event_metadata"]),
      stat_names: list(r["stat_names"]).map((s) => str(s)),
    };
  });
}

function linesOf(value: unknown): readonly LineRow[] {
  return list(value).map((item) => {
    const r = record(item);
    return {
      plane: str(r["plane"]),
      line: str(r["line"]),
      line_id: num(r["line_id"]),
      kind: str(r["kind"]),
      derived: bool(r["derived"]),
      events: num(r["events"]),
      begin_ms: num(r["begin_ms"]),
      end_ms: num(r["end_ms"]),
      busy_ms: num(r["busy_ms"]),
    };
  });
}

const PLANE_COLUMNS: readonly Column<PlaneRow>[] = [
  { key: "name", label: "Plane", value: (r) => r.name, ellipsis: true },
  { key: "id", label: "Id", value: (r) => r.id, numeric: true },
  { key: "lines", label: "Lines", value: (r) => r.lines, numeric: true },
  {
    key: "events",
    label: "Events",
    value: (r) => r.events,
    render: (r) => formatCount(r.events),
    numeric: true,
  },
  {
    key: "event_metadata",
    label: "Event names",
    value: (r) => r.event_metadata,
    render: (r) => formatCount(r.event_metadata),
    numeric: true,
  },
  {
    key: "stat_names",
    label: "Stats on events",
    value: (r) => r.stat_names.join(", "),
    ellipsis: true,
  },
];

const LINE_COLUMNS: readonly Column<LineRow>[] = [
  { key: "plane", label: "Plane", value: (r) => r.plane, ellipsis: true, width: "7em" },
  { key: "line", label: "Line", value: (r) => r.line, ellipsis: true },
  { key: "kind", label: "Kind", value: (r) => r.kind },
  { key: "derived", label: "Derived", value: (r) => yesNo(r.derived) },
  {
    key: "events",
    label: "Events",
    value: (r) => r.events,
    render: (r) => formatCount(r.events),
    numeric: true,
  },
  {
    key: "begin_ms",
    label: "Begin (ms)",
    value: (r) => r.begin_ms,
    render: (r) => formatMs(r.begin_ms),
    numeric: true,
  },
  {
    key: "end_ms",
    label: "End (ms)",
    value: (r) => r.end_ms,
    render: (r) => formatMs(r.end_ms),
    numeric: true,
  },
  {
    key: "busy_ms",
    label: "Busy (ms)",
    value: (r) => r.busy_ms,
    render: (r) => formatMs(r.busy_ms),
    numeric: true,
    title: "Time covered by at least one of the line's events (nested events count once)",
  },
];

function ViewNeeds({ needs }: { needs: readonly ViewNeed[] }) {
  return (
    <table class="data-table view-needs" data-testid="view-needs-table">
      <thead>
        <tr>
          <th scope="col">View</th>
          <th scope="col">Needs</th>
          <th scope="col">This capture has</th>
          <th scope="col">Has it</th>
          <th scope="col" title="Whether the run lists the view (run_tools)">
            Offered
          </th>
        </tr>
      </thead>
      <tbody>
        {needs.map((row) => (
          <tr
            key={row.view}
            data-testid="view-needs-row"
            data-view={row.view}
            data-has-data={String(row.has_data)}
            data-offered={String(row.offered)}
            class={row.has_data ? undefined : "zero"}
          >
            <td data-testid="view-needs-row-view">{viewLabel(row.view)}</td>
            <td class="wrap" data-testid="view-needs-row-needs">
              {row.needs}
            </td>
            <td class="wrap" data-testid="view-needs-row-found">
              {row.found}
            </td>
            <td data-testid="view-needs-row-has_data">
              <span class={`badge ${row.has_data ? "badge-yes" : "badge-no"}`}>
                {yesNo(row.has_data)}
              </span>
            </td>
            <td data-testid="view-needs-row-offered">{yesNo(row.offered)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const NOT_STATED = "not stated in the trace";

/** What a PyTorch trace states of its run: version, rank of world size, backend, NCCL, GPUs. */
function PytorchFacts({ facts }: { facts: Readonly<Record<string, unknown>> }) {
  const rank = num(facts["rank"]);
  const worldSize = num(facts["world_size"]);
  const devices = list(facts["devices"]).map((device) => str(device)).filter((name) => name);
  return (
    <>
      <dt>PyTorch version</dt>
      <dd data-testid="profile-host-pytorch-version">{str(facts["version"]) || NOT_STATED}</dd>
      <dt>Rank</dt>
      <dd>
        {rank === null && worldSize === null ? (
          <span data-testid="profile-host-pytorch-rank">{NOT_STATED} (not distributed)</span>
        ) : (
          <>
            <span data-testid="profile-host-pytorch-rank">{rank === null ? "—" : String(rank)}</span>
            {" of world size "}
            <span data-testid="profile-host-pytorch-world-size">
              {worldSize === null ? "—" : String(worldSize)}
            </span>
          </>
        )}
      </dd>
      <dt>Backend</dt>
      <dd data-testid="profile-host-pytorch-backend">{str(facts["backend"]) || NOT_STATED}</dd>
      {str(facts["nccl_version"]) ? (
        <>
          <dt>NCCL version</dt>
          <dd data-testid="profile-host-pytorch-nccl">{str(facts["nccl_version"])}</dd>
        </>
      ) : null}
      {devices.length ? (
        <>
          <dt>GPUs</dt>
          <dd data-testid="profile-host-pytorch-devices">{devices.join(", ")}</dd>
        </>
      ) : null}
    </>
  );
}

function HostInfo({ host, index }: { host: Readonly<Record<string, unknown>>; index: number }) {
  const name = str(host["host"]);
  const producer = record(host["producer"]);
  const versions = Object.entries(record(producer["versions"])).map(
    ([key, value]) => `${key} ${str(value, String(value))}`,
  );
  const span = list(host["span_ms"]).map((v) => num(v));
  const capture = num(host["capture_window_ms"]);
  const hostnames = list(host["hostnames"]).map((h) => str(h));
  const pytorchValue = host["pytorch"];
  const pytorch = pytorchValue !== null && typeof pytorchValue === "object"
    ? record(pytorchValue)
    : null;
  return (
    <Section title={`Host ${name}`} testid="profile-host-section">
      <div class="profile-host" data-testid="profile-host" data-host={name}>
        <dl class="facts">
          <dt>Framework</dt>
          <dd>
            <span data-testid="profile-host-framework">{str(producer["framework"], "unknown")}</span>
            {str(producer["evidence"]) ? (
              <span class="hint" data-testid="profile-host-evidence">
                {" "}
                (from {str(producer["evidence"])})
              </span>
            ) : null}
          </dd>
          <dt>Versions</dt>
          <dd data-testid="profile-host-versions">
            {versions.length ? versions.join(", ") : "not recorded in the profile"}
          </dd>
          {pytorch ? <PytorchFacts facts={pytorch} /> : null}
          <dt>Host names in the profile</dt>
          <dd data-testid="profile-host-hostnames">{hostnames.join(", ") || "—"}</dd>
          <dt>Capture window</dt>
          <dd>
            <Figure
              testid="profile-host-capture-ms"
              value={capture === null ? "—" : formatMs(capture)}
              unit="ms"
            />
          </dd>
          <dt>Events span</dt>
          <dd data-testid="profile-host-span-ms">
            {span.length === 2 ? `${formatMs(span[0] ?? null)} – ${formatMs(span[1] ?? null)} ms` : "no events"}
          </dd>
        </dl>
        <h4>Planes</h4>
        <DataTable
          rows={planesOf(host["planes"])}
          columns={PLANE_COLUMNS}
          testid={`planes-${index}`}
          rowTestid="plane-row"
          rowKey={(row, i) => `${i} ${row.name}`}
          rowAttributes={(row) => ({ "data-plane": row.name })}
          sortable
          empty="No planes."
        />
        <h4>Lines</h4>
        <DataTable
          rows={linesOf(host["lines"])}
          columns={LINE_COLUMNS}
          testid={`lines-${index}`}
          rowTestid="line-row"
          rowKey={(row, i) => `${i} ${row.plane} ${row.line}`}
          rowAttributes={(row) => ({ "data-line": row.line, "data-plane": row.plane })}
          sortable
          pageSize={100}
          empty="No lines."
        />
      </div>
    </Section>
  );
}

export function ProfileInfo({ doc, run, view, host }: ViewProps) {
  const diagnostics = diagnosticsOf(doc);
  const hosts = list(doc["hosts"]).map((h) => record(h));
  const panel = <DiagnosticsPanel diagnostics={diagnostics} />;
  return (
    <div class="analysis-view profile-info" data-testid="profile-info-view">
      <div class="cards">
        <Card title="Hosts" testid="card-profile-hosts">
          <p class="card-main">
            <Figure testid="profile-info-host-count" value={formatCount(num(doc["host_count"]))} big />
          </p>
        </Card>
        <Card title="Events" testid="card-profile-events">
          <p class="card-main">
            <Figure
              testid="profile-info-total-events"
              value={formatCount(num(doc["total_events"]))}
              big
            />
          </p>
          <p class="card-sub">over every plane and line</p>
        </Card>
      </div>

      <Section title="What each view needs, and whether this capture has it" testid="view-needs">
        <ViewNeeds needs={needsOf(doc["views"])} />
      </Section>

      {hosts.map((h, index) => (
        <HostInfo host={h} index={index} key={str(h["host"])} />
      ))}

      <p class="csv-line">
        <CsvLink run={run} view={view} host={host} table="lines" testid="lines-csv" />
      </p>
      {panel}
    </div>
  );
}
