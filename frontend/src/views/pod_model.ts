/**
 * The pod viewer's document (docs/api.md, pod_viewer) read into typed steps and columns.
 *
 * A column is one worker of one step: a host, or on GPU hosts one GPU of the host (the
 * server's `cores`), with its step time and nine-category breakdown in microseconds and its
 * bottleneck category. A straggler row names, per step, the slowest host, its lag behind the
 * median host and the category that explains the lag.
 */
import { bool, list, num, record, str } from "./format";
import { breakdownOf, type CategoryKey } from "./step_time";

export interface PodColumn {
  /** What the chart's axis shows: the host, or "host · GPU" for a GPU of a GPU host. */
  readonly label: string;
  readonly host: string;
  readonly core: string | null;
  /** The host's own number for this step (hosts number steps independently). */
  readonly host_step_num: number | null;
  readonly step_time_us: number;
  readonly breakdown_us: Readonly<Record<CategoryKey, number>>;
  readonly bottleneck: string;
}

export interface PodStep {
  readonly step_num: number | null;
  readonly index: number | null;
  readonly columns: readonly PodColumn[];
}

export interface StragglerRow {
  readonly step_num: number | null;
  readonly host: string;
  readonly step_time_us: number | null;
  readonly median_step_time_us: number | null;
  readonly lag_us: number | null;
  readonly lag_percent: number | null;
  readonly category: string;
  readonly category_lag_us: number | null;
  readonly significant: boolean;
}

export interface PodDoc {
  readonly hosts: readonly string[];
  readonly num_steps: number;
  readonly steps: readonly PodStep[];
  readonly stragglers: readonly StragglerRow[];
}

/** "/device:GPU:0" -> "GPU:0"; other names as they are. */
export function coreLabel(core: string): string {
  return core.replace(/^\/device:/, "");
}

function columnsOf(value: unknown): PodColumn[] {
  const columns: PodColumn[] = [];
  for (const item of list(value)) {
    const host = record(item);
    const name = str(host["host"]);
    const base = {
      host: name,
      host_step_num: num(host["step_num"]),
    };
    const cores = list(host["cores"]);
    if (cores.length === 0) {
      columns.push({
        ...base,
        label: name,
        core: null,
        step_time_us: num(host["step_time_us"]) ?? 0,
        breakdown_us: breakdownOf(host["breakdown_us"]),
        bottleneck: str(host["bottleneck"]),
      });
      continue;
    }
    for (const coreItem of cores) {
      const core = record(coreItem);
      const coreName = str(core["core"]);
      columns.push({
        ...base,
        label: `${name} · ${coreLabel(coreName)}`,
        core: coreName,
        step_time_us: num(core["step_time_us"]) ?? 0,
        breakdown_us: breakdownOf(core["breakdown_us"]),
        bottleneck: str(core["bottleneck"]),
      });
    }
  }
  return columns;
}

export function podDocOf(doc: Readonly<Record<string, unknown>>): PodDoc {
  const steps = list(doc["steps"]).map((item) => {
    const step = record(item);
    return {
      step_num: num(step["step_num"]),
      index: num(step["index"]),
      columns: columnsOf(step["hosts"]),
    };
  });
  const stragglers = list(doc["stragglers"]).map((item) => {
    const row = record(item);
    return {
      step_num: num(row["step_num"]),
      host: str(row["host"]),
      step_time_us: num(row["step_time_us"]),
      median_step_time_us: num(row["median_step_time_us"]),
      lag_us: num(row["lag_us"]),
      lag_percent: num(row["lag_percent"]),
      category: str(row["category"]),
      category_lag_us: num(row["category_lag_us"]),
      significant: bool(row["significant"]) ?? false,
    };
  });
  return {
    hosts: list(doc["hosts"]).map((h) => str(h)),
    num_steps: num(doc["num_steps"]) ?? steps.length,
    steps,
    stragglers,
  };
}

/** The index of the column that took longest (0 for none). */
export function slowestColumn(columns: readonly PodColumn[]): number {
  let best = 0;
  columns.forEach((column, i) => {
    if (column.step_time_us > (columns[best]?.step_time_us ?? -1)) best = i;
  });
  return best;
}
