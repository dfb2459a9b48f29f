/**
 * The pod viewer's PyTorch sections (docs/api.md, pod_viewer `pytorch_ranks`,
 * `pytorch_straggler`): per rank its mean step time, communication, computation and their
 * overlap (ms per step), the share of its communication that overlaps computation, and the
 * collectives it ran over the capture; then the rank the others wait for in their collectives,
 * with the wait per step and its share of the step. Shown only on PyTorch runs (the keys are
 * absent otherwise). Rank, world size and backend read "—" where the trace states none.
 *
 * Hooks: pytorch-ranks-section, the table `pytorch-ranks` (rows pytorch-rank-row, data-host,
 * data-rank; cells pytorch-rank-row-<column>), the table `pytorch-collectives` (rows
 * pytorch-collective-row, data-host, data-name; cells pytorch-collective-row-<column>),
 * pytorch-straggler (data-host, data-rank, data-significant) with pytorch-straggler-wait-ms and
 * pytorch-straggler-wait-percent.
 */
import { DataTable, type Column } from "../components/data_table";
import { bool, formatMs, formatPercent, list, num, record, str } from "./format";
import { countColumn, msColumn, type NumberKey, percentColumn } from "./number_columns";
import { Figure, Section } from "./widgets";

export interface RankRow {
  readonly host: string;
  /** null where the trace states no rank (the server's -1). */
  readonly rank: number | null;
  readonly world_size: number | null;
  readonly backend: string;
  readonly mean_step_time_ms: number | null;
  readonly communication_ms: number | null;
  readonly computation_ms: number | null;
  readonly overlap_ms: number | null;
  readonly communication_overlapped_percent: number | null;
}

export interface CollectiveRow {
  readonly host: string;
  readonly rank: number | null;
  readonly name: string;
  readonly calls: number | null;
  readonly time_ms: number | null;
}

export interface Straggler {
  readonly host: string;
  readonly rank: number | null;
  readonly wait_ms: number | null;
  readonly wait_percent_of_step: number | null;
  readonly significant: boolean;
}

function stated(value: unknown): number | null {
  const n = num(value);
  return n === null || n < 0 ? null : n;
}

function ranksOf(value: unknown): { ranks: RankRow[]; collectives: CollectiveRow[] } {
  const ranks: RankRow[] = [];
  const collectives: CollectiveRow[] = [];
  for (const item of list(value)) {
    const row = record(item);
    const rank: RankRow = {
      host: str(row["host"]),
      rank: stated(row["rank"]),
      world_size: stated(row["world_size"]),
      backend: str(row["backend"]),
      mean_step_time_ms: num(row["mean_step_time_ms"]),
      communication_ms: num(row["communication_ms"]),
      computation_ms: num(row["computation_ms"]),
      overlap_ms: num(row["overlap_ms"]),
      communication_overlapped_percent: num(row["communication_overlapped_percent"]),
    };
    ranks.push(rank);
    for (const c of list(row["collectives"])) {
      const collective = record(c);
      collectives.push({
        host: rank.host,
        rank: rank.rank,
        name: str(collective["name"]),
        calls: num(collective["calls"]),
        time_ms: num(collective["time_ms"]),
      });
    }
  }
  return { ranks, collectives };
}

function stragglerOf(value: unknown): Straggler | null {
  if (value === null || typeof value !== "object") return null;
  const row = record(value);
  return {
    host: str(row["host"]),
    rank: stated(row["rank"]),
    wait_ms: num(row["wait_ms"]),
    wait_percent_of_step: num(row["wait_percent_of_step"]),
    significant: bool(row["significant"]) ?? false,
  };
}

function rankText(rank: number | null): string {
  return rank === null ? "—" : String(rank);
}

/** A rank or world size: "—" where the trace states none. */
function statedColumn<Row>(key: NumberKey<Row>, label: string): Column<Row> {
  const read = (row: Row): number | null => row[key] as number | null;
  return { key, label, value: read, render: (row) => rankText(read(row)), numeric: true };
}

const RANK_COLUMNS: readonly Column<RankRow>[] = [
  { key: "host", label: "Host", value: (row) => row.host, ellipsis: true, width: "7em" },
  statedColumn<RankRow>("rank", "Rank"),
  statedColumn<RankRow>("world_size", "World size"),
  { key: "backend", label: "Backend", value: (row) => row.backend, render: (row) => row.backend || "—" },
  msColumn<RankRow>("mean_step_time_ms", "Step ms", "Mean step time (ms)"),
  msColumn<RankRow>("communication_ms", "Communication ms",
    "Time in collectives per step (ms)"),
  msColumn<RankRow>("computation_ms", "Computation ms",
    "Time in kernels per step (CPU exec on CPU-only ranks), ms"),
  msColumn<RankRow>("overlap_ms", "Overlap ms",
    "Time per step when communication and computation run at once (ms)"),
  percentColumn<RankRow>("communication_overlapped_percent", "Comm. overlapped %",
    "The share of communication time that overlaps computation"),
];

const COLLECTIVE_COLUMNS: readonly Column<CollectiveRow>[] = [
  { key: "host", label: "Host", value: (row) => row.host, ellipsis: true, width: "7em" },
  statedColumn<CollectiveRow>("rank", "Rank"),
  { key: "name", label: "Collective", value: (row) => row.name, ellipsis: true },
  countColumn<CollectiveRow>("calls", "Calls", "How many times it ran over the capture"),
  msColumn<CollectiveRow>("time_ms", "Time ms", "Its time over the capture (ms)"),
];

function StragglerNote({ straggler }: { straggler: Straggler }) {
  const who = straggler.rank === null
    ? straggler.host
    : `rank ${straggler.rank} (${straggler.host})`;
  return (
    <p
      class={straggler.significant ? "state notice" : "hint"}
      data-testid="pytorch-straggler"
      data-host={straggler.host}
      data-rank={rankText(straggler.rank)}
      data-significant={straggler.significant ? "yes" : "no"}
    >
      {straggler.significant
        ? `The other ranks wait for ${who} in their collectives: `
        : `The rank the others wait for most is ${who}, though not significantly: `}
      <Figure testid="pytorch-straggler-wait-ms" value={formatMs(straggler.wait_ms)} unit="ms" />
      {" per step, "}
      <Figure testid="pytorch-straggler-wait-percent"
        value={formatPercent(straggler.wait_percent_of_step)} unit="%" />
      {" of the step. In synchronous training a slow rank shows as the others' longer " +
        "collectives, not as a longer step of its own."}
    </p>
  );
}

export function PytorchRanks({ doc }: { doc: Readonly<Record<string, unknown>> }) {
  if (!Array.isArray(doc["pytorch_ranks"])) return null;
  const { ranks, collectives } = ranksOf(doc["pytorch_ranks"]);
  const straggler = stragglerOf(doc["pytorch_straggler"]);
  return (
    <Section title="PyTorch ranks: per step" testid="pytorch-ranks-section">
      {straggler ? <StragglerNote straggler={straggler} /> : null}
      <DataTable
        rows={ranks}
        columns={RANK_COLUMNS}
        testid="pytorch-ranks"
        rowTestid="pytorch-rank-row"
        rowKey={(row, i) => `${i} ${row.host}`}
        rowAttributes={(row) => ({ "data-host": row.host, "data-rank": rankText(row.rank) })}
        sortable
        empty={<span>No rank has steps.</span>}
      />
      <h4>Collectives over the capture</h4>
      <DataTable
        rows={collectives}
        columns={COLLECTIVE_COLUMNS}
        testid="pytorch-collectives"
        rowTestid="pytorch-collective-row"
        rowKey={(row, i) => `${i} ${row.host} ${row.name}`}
        rowAttributes={(row) => ({ "data-host": row.host, "data-name": row.name })}
        sortable
        empty={<span>No collective ran.</span>}
      />
    </Section>
  );
}
