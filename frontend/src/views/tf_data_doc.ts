/**
 * The tf_data_bottleneck_analysis document, read defensively into typed records
 * (docs/api.md, "tf_data_bottleneck_analysis"). Iterator ids are strings: they use all 64 bits.
 */
import { type AdviceItem, adviceOf, type WithheldItem, withheldOf } from "./advice";
import { bool, list, num, record, str } from "./format";

export interface TfDataSummary {
  readonly is_input_bound: boolean;
  readonly message: string;
  readonly host: string;
  readonly input_pipeline: string;
  readonly max_latency_us: number | null;
  readonly iterator_name: string;
  readonly iterator_long_name: string;
  readonly suggestion: string;
}

export interface TfDataBottleneck {
  readonly host: string;
  readonly input_pipeline: string;
  readonly max_latency_us: number | null;
  readonly iterator_name: string;
  readonly iterator_long_name: string;
  readonly iterator_latency_us: number | null;
  readonly suggestion_type: string;
  readonly suggestions: readonly string[];
  readonly advice: readonly AdviceItem[]; // the suggestions with their evidence
  readonly advice_withheld: readonly WithheldItem[];
}

export interface TfDataPipeline {
  readonly host: string;
  readonly input_pipeline: string;
  readonly kind: string;
  readonly min_latency_us: number | null;
  readonly avg_latency_us: number | null;
  readonly max_latency_us: number | null;
  readonly num_calls: number | null;
  readonly num_slow_calls: number | null;
  readonly ends_in_prefetch: boolean | null;
}

export interface TfDataNode {
  readonly id: string;
  readonly name: string;
  readonly long_name: string;
  readonly parent_id: string | null;
  readonly start_time_us: number | null;
  readonly total_duration_us: number | null;
  readonly self_time_us: number | null;
  readonly num_calls: number | null;
  readonly on_critical_path: boolean;
  readonly is_bottleneck: boolean;
}

export interface TfDataGraph {
  readonly host: string;
  readonly input_pipeline: string;
  readonly rank: number;
  readonly latency_us: number | null;
  readonly start_time_us: number | null;
  readonly nodes: readonly TfDataNode[];
}

export function summaryOf(value: unknown): TfDataSummary {
  const s = record(value);
  return {
    is_input_bound: bool(s["is_input_bound"]) ?? false,
    message: str(s["message"]),
    host: str(s["host"]),
    input_pipeline: str(s["input_pipeline"]),
    max_latency_us: num(s["max_latency_us"]),
    iterator_name: str(s["iterator_name"]),
    iterator_long_name: str(s["iterator_long_name"]),
    suggestion: str(s["suggestion"]),
  };
}

export function bottlenecksOf(value: unknown): readonly TfDataBottleneck[] {
  return list(value).map((item) => {
    const r = record(item);
    const suggestions = list(r["suggestions"]).filter((s): s is string => typeof s === "string");
    return {
      host: str(r["host"]),
      input_pipeline: str(r["input_pipeline"]),
      max_latency_us: num(r["max_latency_us"]),
      iterator_name: str(r["iterator_name"]),
      iterator_long_name: str(r["iterator_long_name"]),
      iterator_latency_us: num(r["iterator_latency_us"]),
      suggestion_type: str(r["suggestion_type"]),
      suggestions: suggestions.length ? suggestions : [str(r["suggestion"])],
      advice: adviceOf(r["advice"], suggestions.length ? suggestions : [str(r["suggestion"])]),
      advice_withheld: withheldOf(r["advice_withheld"]),
    };
  });
}

export function pipelinesOf(value: unknown): readonly TfDataPipeline[] {
  return list(value).map((item) => {
    const r = record(item);
    return {
      host: str(r["host"]),
      input_pipeline: str(r["input_pipeline"]),
      kind: str(r["kind"]),
      min_latency_us: num(r["min_latency_us"]),
      avg_latency_us: num(r["avg_latency_us"]),
      max_latency_us: num(r["max_latency_us"]),
      num_calls: num(r["num_calls"]),
      num_slow_calls: num(r["num_slow_calls"]),
      ends_in_prefetch: bool(r["ends_in_prefetch"]),
    };
  });
}

function nodeOf(item: unknown): TfDataNode {
  const r = record(item);
  const parent = r["parent_id"];
  return {
    id: str(r["id"]),
    name: str(r["name"]),
    long_name: str(r["long_name"]),
    parent_id: typeof parent === "string" ? parent : null,
    start_time_us: num(r["start_time_us"]),
    total_duration_us: num(r["total_duration_us"]),
    self_time_us: num(r["self_time_us"]),
    num_calls: num(r["num_calls"]),
    on_critical_path: bool(r["on_critical_path"]) ?? false,
    is_bottleneck: bool(r["is_bottleneck"]) ?? false,
  };
}

export function graphsOf(value: unknown): readonly TfDataGraph[] {
  return list(value).map((item) => {
    const r = record(item);
    return {
      host: str(r["host"]),
      input_pipeline: str(r["input_pipeline"]),
      rank: num(r["rank"]) ?? 0,
      latency_us: num(r["latency_us"]),
      start_time_us: num(r["start_time_us"]),
      nodes: list(r["nodes"]).map(nodeOf),
    };
  });
}

/** Distinct values in first-seen order. */
export function distinct(values: readonly string[]): readonly string[] {
  return [...new Set(values)];
}
