/**
 * The memory_profile document, read into typed values, and byte sizes for people.
 *
 * Every key is read with the helpers of format.ts, so a missing or mistyped key shows "—".
 * Sizes: `byteUnit` picks GiB for a size of at least 1 GiB, else MiB, else KiB (and B under
 * 1 KiB); `formatBytesIn` shows a size in a given unit with 2 decimals, which the browser
 * tests parse and compare with the JSON (docs/api.md, memory_profile).
 */
import { list, num, record, str } from "./format";

export interface ByteUnit {
  readonly name: "GiB" | "MiB" | "KiB" | "B";
  readonly bytes: number;
}

export const UNITS: readonly ByteUnit[] = [
  { name: "GiB", bytes: 2 ** 30 },
  { name: "MiB", bytes: 2 ** 20 },
  { name: "KiB", bytes: 2 ** 10 },
  { name: "B", bytes: 1 },
];

/** The unit a size is best read in: the largest whose value is at least 1. */
export function byteUnit(bytes: number | null): ByteUnit {
  const size = Math.abs(bytes ?? 0);
  return UNITS.find((unit) => size >= unit.bytes) ?? (UNITS[UNITS.length - 1] as ByteUnit);
}

/** `bytes` in `unit`, 2 decimals ("1.50"); null is "—". */
export function formatBytesIn(bytes: number | null, unit: ByteUnit): string {
  return bytes === null ? "—" : (bytes / unit.bytes).toFixed(2);
}

export interface Snapshot {
  readonly index: number | null;
  readonly time_ms: number | null;
  readonly stack_bytes: number | null;
  readonly heap_bytes: number | null;
  readonly free_bytes: number | null;
  readonly fragmentation_percent: number | null;
  readonly event: string;
  readonly requested_bytes: number | null;
  readonly allocation_bytes: number | null;
  readonly tf_op: string;
  /** The event's group (the reference's step id). */
  readonly step_id: number | null;
  /** The overview's step number of the step holding this time (null: none). */
  readonly step: number | null;
  readonly region_type: string;
  readonly data_type: string;
  readonly tensor_shape: string;
  readonly inherited: boolean;
}

export interface BreakdownRow {
  readonly op_name: string;
  readonly allocation_bytes: number | null;
  readonly requested_bytes: number | null;
  readonly occurrences: number | null;
  readonly region_type: string;
  readonly data_type: string;
  readonly shape: string;
  readonly kind: string;
}

export interface Peak {
  readonly time_ms: number | null;
  readonly stack_bytes: number | null;
  readonly heap_bytes: number | null;
  readonly free_bytes: number | null;
  readonly in_use_bytes: number | null;
  readonly fragmentation_percent: number | null;
  readonly step_id: number | null;
  /** The overview's step number of the step holding the peak (null: none). */
  readonly step: number | null;
}

export interface MemorySummary {
  readonly num_allocations: number | null;
  readonly num_deallocations: number | null;
  readonly memory_capacity_bytes: number | null;
  readonly peak_heap_usage_lifetime_bytes: number | null;
  readonly peak: Peak;
}

export interface MemoryDocument {
  readonly memory_ids: readonly string[];
  readonly memory_id: string | null;
  readonly summary: MemorySummary | null;
  readonly timeline: readonly Snapshot[];
  readonly breakdown: readonly BreakdownRow[];
  readonly full_timespan_ms: readonly [number, number] | null;
  readonly timeline_range_ms: readonly [number, number] | null;
  readonly timeline_total_points: number | null;
  readonly timeline_sampled: boolean;
  readonly peak_timeline_index: number | null;
  /** PyTorch's allocator (`memory_source` "pytorch"): heap is allocated, heap + free reserved. */
  readonly pytorch: boolean;
}

/** PyTorch's reserved memory: its allocated (heap) plus the cached free blocks (free). */
export function reservedBytes(heap: number | null, free: number | null): number | null {
  return heap === null ? null : heap + (free ?? 0);
}

function pair(value: unknown): readonly [number, number] | null {
  const [a, b] = list(value).map(num);
  return a != null && b != null ? [a, b] : null;
}

function snapshotOf(value: unknown): Snapshot {
  const row = record(value);
  return {
    index: num(row["index"]),
    time_ms: num(row["time_ms"]),
    stack_bytes: num(row["stack_bytes"]),
    heap_bytes: num(row["heap_bytes"]),
    free_bytes: num(row["free_bytes"]),
    fragmentation_percent: num(row["fragmentation_percent"]),
    event: str(row["event"]),
    requested_bytes: num(row["requested_bytes"]),
    allocation_bytes: num(row["allocation_bytes"]),
    tf_op: str(row["tf_op"]),
    step_id: num(row["step_id"]),
    step: num(row["step"]),
    region_type: str(row["region_type"]),
    data_type: str(row["data_type"]),
    tensor_shape: str(row["tensor_shape"]),
    inherited: row["inherited"] === true,
  };
}

function breakdownRowOf(value: unknown): BreakdownRow {
  const row = record(value);
  return {
    op_name: str(row["op_name"]),
    allocation_bytes: num(row["allocation_bytes"]),
    requested_bytes: num(row["requested_bytes"]),
    occurrences: num(row["occurrences"]),
    region_type: str(row["region_type"]),
    data_type: str(row["data_type"]),
    shape: str(row["shape"]),
    kind: str(row["kind"], "tensor"),
  };
}

function summaryOf(value: unknown): MemorySummary | null {
  if (value === null || typeof value !== "object") return null;
  const summary = record(value);
  const peak = record(summary["peak"]);
  return {
    num_allocations: num(summary["num_allocations"]),
    num_deallocations: num(summary["num_deallocations"]),
    memory_capacity_bytes: num(summary["memory_capacity_bytes"]),
    peak_heap_usage_lifetime_bytes: num(summary["peak_heap_usage_lifetime_bytes"]),
    peak: {
      time_ms: num(peak["time_ms"]),
      stack_bytes: num(peak["stack_bytes"]),
      heap_bytes: num(peak["heap_bytes"]),
      free_bytes: num(peak["free_bytes"]),
      in_use_bytes: num(peak["in_use_bytes"]),
      fragmentation_percent: num(peak["fragmentation_percent"]),
      step_id: num(peak["step_id"]),
      step: num(peak["step"]),
    },
  };
}

export function memoryDocumentOf(doc: Readonly<Record<string, unknown>>): MemoryDocument {
  const memoryId = doc["memory_id"];
  return {
    memory_ids: list(doc["memory_ids"]).map((id) => str(id)),
    memory_id: typeof memoryId === "string" ? memoryId : null,
    summary: summaryOf(doc["summary"]),
    timeline: list(doc["timeline"]).map(snapshotOf),
    breakdown: list(doc["breakdown"]).map(breakdownRowOf),
    full_timespan_ms: pair(doc["full_timespan_ms"]),
    timeline_range_ms: pair(doc["timeline_range_ms"]),
    timeline_total_points: num(doc["timeline_total_points"]),
    timeline_sampled: doc["timeline_sampled"] === true,
    peak_timeline_index: num(doc["peak_timeline_index"]),
    pytorch: doc["memory_source"] === "pytorch",
  };
}
