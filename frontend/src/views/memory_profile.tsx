/**
 * memory_profile: one allocator's memory over the profile, its peak, and what made up the peak.
 *
 * From the top: the allocator (memory id) selector and the timeline's range; summary cards
 * (allocations and deallocations, capacity, the lifetime peak, and the peak within the
 * profile with its time, stack, heap, free memory and fragmentation); the timeline chart
 * (memory_timeline.tsx) with a details panel showing the hovered snapshot (the peak until
 * something is hovered); then the breakdown of what was in use at the peak, sortable and
 * filterable by op name, with each row's share of the peak. Sizes are in GiB, or MiB (KiB)
 * where smaller. Zooming the chart fetches every snapshot of the range (parameters
 * `start_time_ms`/`end_time_ms`, kept in the URL); "Whole profile" goes back. A profile
 * whose allocators recorded nothing shows the server's explanation instead.
 *
 * Hooks: memory-view (data-memory-id), memory-id-select, memory-range (data-start,
 * data-end), memory-zoom-reset, memory-timeline-note; figures memory-num-allocations,
 * memory-num-deallocations, memory-capacity, memory-peak-lifetime, memory-peak-in-use,
 * memory-peak-time, memory-peak-stack, memory-peak-heap, memory-peak-free,
 * memory-peak-fragmentation (sizes carry data-bytes and data-unit); memory-timeline (see
 * memory_timeline.tsx); memory-details (data-position: the hovered point's index in the
 * document's timeline) with memory-detail-<key> values; the table `memory-breakdown`
 * (memory-breakdown-filter: op name) with rows memory-breakdown-row (data-op-name,
 * data-kind) and cells memory-breakdown-row-<column>; memory-empty (no allocator events).
 *
 * PyTorch's allocator (`memory_source` "pytorch", data-source="pytorch" on memory-view): the
 * figures in PyTorch's terms, allocated (heap, memory-peak-allocated) and reserved (heap +
 * free, memory-peak-reserved), with no stack, heap, free or fragmentation figure.
 */
import type { ComponentChildren } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import { DataTable, type Column, type Filter } from "../components/data_table";
import { MiddleText } from "../components/middle_text";
import { DiagnosticsPanel } from "./diagnostics";
import { formatCount, formatMs, formatPercent, plural } from "./format";
import {
  type BreakdownRow,
  byteUnit,
  type ByteUnit,
  formatBytesIn,
  memoryDocumentOf,
  reservedBytes,
  type Snapshot,
} from "./memory_data";
import { MemoryTimeline, snapshotFields } from "./memory_timeline";
import { diagnosticsOf, type ViewProps } from "./types";
import { Card, CsvLink, Figure, Section } from "./widgets";

/** A size in its own unit: `<span data-testid data-bytes data-unit>1.50</span> GiB`. */
function Bytes({ testid, bytes, big = false }: { testid: string; bytes: number | null; big?: boolean }) {
  const unit = byteUnit(bytes);
  return (
    <span class={big ? "figure figure-big" : "figure"}>
      <span
        class="figure-value"
        data-testid={testid}
        data-bytes={bytes === null ? "" : String(bytes)}
        data-unit={unit.name}
      >
        {formatBytesIn(bytes, unit)}
      </span>
      <span class="figure-unit"> {unit.name}</span>
    </span>
  );
}

const KIND_TITLES: Readonly<Record<string, string>> = {
  stack: "Stack reserved by the allocator at the peak",
  unattributed:
    "Heap in use at the peak that no allocation recorded in the profile accounts for: " +
    "memory allocated before the capture began (weights, variables, earlier tensors)",
};

/** What allocators write when they know no data type: shown as missing, never as a type. */
const NO_DATA_TYPES = new Set(["", "INVALID"]);

/** A size in the table's unit; a size too small for 2 decimals of it reads "<0.01", not 0.00. */
function tableBytes(bytes: number | null, unit: ByteUnit): ComponentChildren {
  const text = formatBytesIn(bytes, unit);
  if (bytes === null || bytes === 0 || Number(text) !== 0) return text;
  return <span title={`${formatCount(bytes)} B`}>&lt;0.01</span>;
}

type TextKey = "region_type" | "data_type" | "shape";

/** The text columns (region, data type, shape) that some row fills; empty ones are left out. */
function filledTextColumns(rows: readonly BreakdownRow[]): ReadonlySet<TextKey> {
  const filled = new Set<TextKey>();
  for (const row of rows) {
    if (row.region_type) filled.add("region_type");
    if (!NO_DATA_TYPES.has(row.data_type)) filled.add("data_type");
    if (row.shape) filled.add("shape");
  }
  return filled;
}

function breakdownColumns(
  unit: ByteUnit,
  peakBytes: number | null,
  filled: ReadonlySet<TextKey>,
): Column<BreakdownRow>[] {
  const size = (key: "allocation_bytes" | "requested_bytes", label: string, title: string) => ({
    key,
    label: `${label} (${unit.name})`,
    title,
    value: (row: BreakdownRow) => row[key],
    render: (row: BreakdownRow) => tableBytes(row[key], unit),
    numeric: true,
    width: "9em",
  });
  const text: Column<BreakdownRow>[] = [
    { key: "region_type", label: "Region", value: (row) => row.region_type, width: "7em" },
    {
      key: "data_type",
      label: "Data type",
      value: (row) => (NO_DATA_TYPES.has(row.data_type) ? null : row.data_type),
      render: (row) =>
        NO_DATA_TYPES.has(row.data_type) ? (
          <span title={row.data_type ? `the allocator wrote ${row.data_type}` : "none recorded"}>
            —
          </span>
        ) : (
          row.data_type
        ),
      width: "6.5em",
    },
    { key: "shape", label: "Shape", value: (row) => row.shape, ellipsis: true, width: "9em" },
  ];
  return [
    {
      key: "op_name",
      label: "Op name",
      value: (row) => row.op_name,
      render: (row) => (
        <MiddleText
          text={row.op_name || "—"}
          title={KIND_TITLES[row.kind] ?? row.op_name}
          class={`memory-kind-${row.kind}`}
        />
      ),
      ellipsis: true,
    },
    size("allocation_bytes", "Allocation", "What the allocator handed out, per occurrence"),
    size("requested_bytes", "Requested", "What the op asked for, per occurrence"),
    {
      key: "occurrences",
      label: "Count",
      title: "Occurrences: equal allocations active at the peak",
      value: (row) => row.occurrences,
      render: (row) => formatCount(row.occurrences),
      numeric: true,
      width: "5em",
    },
    {
      key: "share",
      label: "% of peak",
      title: "Allocation × count, as a share of the memory in use at the peak",
      value: (row) => share(row, peakBytes),
      render: (row) => formatPercent(share(row, peakBytes)),
      numeric: true,
      width: "6.5em",
    },
    ...text.filter((column) => filled.has(column.key as TextKey)),
  ];
}

function share(row: BreakdownRow, peakBytes: number | null): number | null {
  if (row.allocation_bytes === null || !peakBytes) return null;
  return (100 * row.allocation_bytes * (row.occurrences ?? 1)) / peakBytes;
}

/** The Free series starts hidden when free memory is more than this many times the peak. */
const FREE_SHOWN_UP_TO = 4;

const FILTERS: readonly Filter<BreakdownRow>[] = [
  { key: "op", label: "Filter by op name", text: (row) => row.op_name },
];

/** Milliseconds for a URL parameter: at most 6 decimals (nanoseconds), no exponent. */
function msParam(value: number): string {
  return String(Math.round(value * 1e6) / 1e6);
}

function SnapshotDetails({
  snapshot,
  position,
  isPeak,
  pytorch,
}: {
  snapshot: Snapshot;
  position: number;
  isPeak: boolean;
  pytorch: boolean;
}) {
  return (
    <aside class="memory-details" data-testid="memory-details" data-position={String(position)}>
      <h4>{isPeak ? "Snapshot at the peak" : "Snapshot under the pointer"}</h4>
      <dl>
        {snapshotFields(snapshot, pytorch).map(([key, label, value]) => (
          <div class="memory-detail" key={key}>
            <dt>{label}</dt>
            <dd data-testid={`memory-detail-${key}`} title={value}>
              {value}
            </dd>
          </div>
        ))}
      </dl>
      {snapshot.inherited ? (
        <p class="memory-details-note">Op and tensor as recorded by the allocation it frees.</p>
      ) : null}
    </aside>
  );
}

export function MemoryProfile({ doc, run, view, host, params, onParams }: ViewProps) {
  const memory = useMemo(() => memoryDocumentOf(doc), [doc]);
  const diagnostics = diagnosticsOf(doc);
  const summary = memory.summary;
  const peak = summary?.peak ?? null;
  const [hovered, setHovered] = useState<number | null>(null);
  useEffect(() => setHovered(null), [doc]);

  const chartUnit = byteUnit(peak?.in_use_bytes ?? null);
  const showFree = (peak?.free_bytes ?? 0) <= FREE_SHOWN_UP_TO * (peak?.in_use_bytes ?? 0);
  const tableUnit = byteUnit(
    memory.breakdown.reduce((most, row) => Math.max(most, row.allocation_bytes ?? 0), 0),
  );
  const columns = useMemo(
    () =>
      breakdownColumns(tableUnit, peak?.in_use_bytes ?? null, filledTextColumns(memory.breakdown)),
    [tableUnit, peak?.in_use_bytes, memory.breakdown],
  );
  const zoomed = params["start_time_ms"] !== undefined || params["end_time_ms"] !== undefined;
  const idParams = memory.memory_id ? { memory_id: memory.memory_id } : {};
  const position = hovered ?? memory.peak_timeline_index;
  const shown = position === null ? undefined : memory.timeline[position];
  const panel = <DiagnosticsPanel diagnostics={diagnostics} />;

  if (!summary || !peak) {
    return (
      <div class="analysis-view memory-profile" data-testid="memory-view">
        <div class="state notice memory-empty" data-testid="memory-empty">
          <strong>No memory profile.</strong>
          <ul>
            {diagnostics.warnings.map((text, index) => (
              <li key={index}>{text}</li>
            ))}
          </ul>
        </div>
        {/* The warnings are the notice above: the panel keeps the rest, so nothing reads twice. */}
        <DiagnosticsPanel diagnostics={{ ...diagnostics, warnings: [] }} />
      </div>
    );
  }

  const range = memory.timeline_range_ms;
  return (
    <div
      class="analysis-view memory-profile"
      data-testid="memory-view"
      data-memory-id={memory.memory_id ?? ""}
      data-source={memory.pytorch ? "pytorch" : undefined}
    >
      <div class="view-toolbar">
        <label class="toolbar-field">
          Memory ID{" "}
          <select
            data-testid="memory-id-select"
            value={memory.memory_id ?? ""}
            disabled={memory.memory_ids.length < 2}
            onChange={(event) =>
              onParams({ memory_id: (event.currentTarget as HTMLSelectElement).value })
            }
          >
            {memory.memory_ids.map((id) => (
              <option key={id} value={id}>
                {id || "(unnamed)"}
              </option>
            ))}
          </select>
        </label>
        {range ? (
          <span
            class="toolbar-note"
            data-testid="memory-range"
            data-start={String(range[0])}
            data-end={String(range[1])}
          >
            timeline {formatMs(range[0])}–{formatMs(range[1])} ms
          </span>
        ) : null}
        {zoomed ? (
          <button type="button" data-testid="memory-zoom-reset" onClick={() => onParams(idParams)}>
            Whole profile
          </button>
        ) : null}
      </div>

      <div class="cards">
        <Card title="Allocations" testid="card-memory-allocations">
          <p class="card-main">
            <Figure
              testid="memory-num-allocations"
              value={formatCount(summary.num_allocations)}
              big
            />
          </p>
          <p class="card-sub">
            <Figure
              testid="memory-num-deallocations"
              value={formatCount(summary.num_deallocations)}
            />{" "}
            deallocations
          </p>
        </Card>
        <Card title="Memory capacity" testid="card-memory-capacity">
          <p class="card-main">
            <Bytes testid="memory-capacity" bytes={summary.memory_capacity_bytes} big />
          </p>
          <p class="card-sub">
            {memory.pytorch ? "reserved at the peak" : "stack + heap + free at the peak"}
          </p>
        </Card>
        <Card title={memory.pytorch ? "Peak allocated (lifetime)" : "Peak heap usage (lifetime)"}
          testid="card-memory-lifetime">
          <p class="card-main">
            <Bytes testid="memory-peak-lifetime" bytes={summary.peak_heap_usage_lifetime_bytes} big />
          </p>
          <p class="card-sub">the allocator's peak since it was created</p>
        </Card>
        <Card title="Peak memory usage (profile)" testid="card-memory-peak">
          <p class="card-main">
            <Bytes testid="memory-peak-in-use" bytes={peak.in_use_bytes} big />
          </p>
          <ul class="card-sub memory-peak-list">
            <li>
              at <Figure testid="memory-peak-time" value={formatMs(peak.time_ms)} unit="ms" />
              {peak.step !== null ? ` (step ${peak.step})` : ""}
            </li>
            {memory.pytorch ? (
              <>
                <li>
                  allocated <Bytes testid="memory-peak-allocated" bytes={peak.heap_bytes} />
                </li>
                <li>
                  reserved{" "}
                  <Bytes testid="memory-peak-reserved"
                    bytes={reservedBytes(peak.heap_bytes, peak.free_bytes)} />
                </li>
              </>
            ) : (
              <>
                <li>
                  stack <Bytes testid="memory-peak-stack" bytes={peak.stack_bytes} />
                </li>
                <li>
                  heap <Bytes testid="memory-peak-heap" bytes={peak.heap_bytes} />
                </li>
                <li>
                  free <Bytes testid="memory-peak-free" bytes={peak.free_bytes} />
                </li>
                <li>
                  fragmentation{" "}
                  <Figure
                    testid="memory-peak-fragmentation"
                    value={formatPercent(peak.fragmentation_percent)}
                    unit="%"
                  />
                </li>
              </>
            )}
          </ul>
        </Card>
      </div>

      <Section
        title="Memory timeline"
        testid="memory-timeline-section"
        aside={
          <span class="toolbar-note" data-testid="memory-timeline-note">
            {memory.timeline_sampled
              ? `${memory.timeline.length} of ${memory.timeline_total_points ?? "?"} snapshots ` +
                "drawn (each slice's extremes, the peak exact): zoom in for all"
              : plural(memory.timeline.length, "snapshot")}
          </span>
        }
      >
        <div class="memory-timeline-row">
          <MemoryTimeline
            points={memory.timeline}
            unit={chartUnit}
            range={range}
            showFree={showFree}
            pytorch={memory.pytorch}
            onHover={setHovered}
            onZoom={(start, end) =>
              onParams({ ...idParams, start_time_ms: msParam(start), end_time_ms: msParam(end) })
            }
          />
          {shown && position !== null ? (
            <SnapshotDetails
              snapshot={shown}
              position={position}
              isPeak={position === memory.peak_timeline_index}
              pytorch={memory.pytorch}
            />
          ) : null}
        </div>
      </Section>

      <Section
        title="Memory breakdown at the peak"
        testid="memory-breakdown-section"
        aside={
          <CsvLink
            run={run}
            view={view}
            host={host}
            table="breakdown"
            testid="csv-link"
            params={idParams}
          />
        }
      >
        <DataTable
          rows={memory.breakdown}
          columns={columns}
          testid="memory-breakdown"
          rowTestid="memory-breakdown-row"
          rowKey={(row, index) => `${index} ${row.op_name}`}
          rowAttributes={(row) => ({ "data-op-name": row.op_name, "data-kind": row.kind })}
          sortable
          filters={FILTERS}
          empty="Nothing was in use at the peak."
        />
      </Section>

      {panel}
    </div>
  );
}
