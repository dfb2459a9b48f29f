/**
 * tf_data_bottleneck_analysis: which tf.data input pipeline is slow, which iterator makes it
 * slow, and what to change.
 *
 * From the top: the verdict (input-bound or not, the server's message), the bottleneck and
 * its suggestions; the bottleneck table (host pipelines, slowest first); the table of every
 * pipeline's latency; the iterator graph of one execution, chosen by host, pipeline and rank
 * (1 = the slowest call), drawn by tf_data_graph.tsx.
 *
 * Hooks: tfdata-view, tfdata-summary (data-input-bound) with tfdata-message,
 * tfdata-verdict-basis with its -text and -link (verdict_basis.tsx: what the verdict
 * measures, a link to the overview),
 * tfdata-bottleneck-name, tfdata-bottleneck-long-name, tfdata-suggestion (one per
 * suggestion, with its evidence; the withheld ones in advice-withheld: advice.tsx); tables `tfdata-bottlenecks` (rows tfdata-bottleneck-row) and
 * `tfdata-pipelines` (rows tfdata-pipeline-row, data-pipeline, data-host); selectors
 * tfdata-host-select, tfdata-pipeline-select, tfdata-rank-select; tfdata-latency (the
 * selected execution's latency, µs); the graph hooks of tf_data_graph.tsx; tfdata-no-graph.
 */
import { useMemo, useState } from "preact/hooks";
import { DataTable, type Column } from "../components/data_table";
import { AdviceList } from "./advice";
import { DiagnosticsPanel } from "./diagnostics";
import { formatCount, formatUs } from "./format";
import {
  bottlenecksOf,
  distinct,
  graphsOf,
  pipelinesOf,
  summaryOf,
  type TfDataBottleneck,
  type TfDataPipeline,
} from "./tf_data_doc";
import { TfDataGraphView } from "./tf_data_graph";
import { diagnosticsOf, type ViewProps } from "./types";
import { VerdictBasis } from "./verdict_basis";
import { CsvLink, Section } from "./widgets";

function us(
  key: "min_latency_us" | "avg_latency_us" | "max_latency_us",
  label: string,
): Column<TfDataPipeline> {
  return {
    key,
    label,
    value: (row) => row[key],
    render: (row) => formatUs(row[key]),
    numeric: true,
    width: "7em",
  };
}

const PIPELINE_COLUMNS: readonly Column<TfDataPipeline>[] = [
  { key: "host", label: "Host", value: (row) => row.host, ellipsis: true },
  { key: "input_pipeline", label: "Pipeline", value: (row) => row.input_pipeline, width: "7em" },
  { key: "kind", label: "Kind", value: (row) => row.kind, width: "5em" },
  us("min_latency_us", "Min µs"),
  us("avg_latency_us", "Avg µs"),
  us("max_latency_us", "Max µs"),
  {
    key: "num_calls",
    label: "Calls",
    value: (row) => row.num_calls,
    render: (row) => formatCount(row.num_calls),
    numeric: true,
    width: "5em",
  },
  {
    key: "num_slow_calls",
    label: "Slow calls",
    title: "Calls of the pipeline's root slower than 50 µs",
    value: (row) => row.num_slow_calls,
    render: (row) => formatCount(row.num_slow_calls),
    numeric: true,
    width: "6em",
  },
  {
    key: "ends_in_prefetch",
    label: "Prefetch last",
    title: "The pipeline's last transformation is a prefetch",
    value: (row) => (row.ends_in_prefetch === null ? null : row.ends_in_prefetch ? "yes" : "no"),
    width: "7em",
  },
];

const BOTTLENECK_COLUMNS: readonly Column<TfDataBottleneck>[] = [
  { key: "host", label: "Host", value: (row) => row.host, ellipsis: true, width: "8em" },
  { key: "input_pipeline", label: "Pipeline", value: (row) => row.input_pipeline, width: "6em" },
  {
    key: "max_latency_us",
    label: "Max latency µs",
    value: (row) => row.max_latency_us,
    render: (row) => formatUs(row.max_latency_us),
    numeric: true,
    width: "8em",
  },
  {
    key: "iterator_long_name",
    label: "Bottleneck iterator",
    value: (row) => row.iterator_long_name,
    ellipsis: true,
  },
  {
    key: "iterator_latency_us",
    label: "Self µs",
    title: "The bottleneck's self time in the slowest call",
    value: (row) => row.iterator_latency_us,
    render: (row) => formatUs(row.iterator_latency_us),
    numeric: true,
    width: "7em",
  },
  { key: "suggestion_type", label: "Kind", value: (row) => row.suggestion_type, width: "8em" },
];

interface Choice {
  readonly host: string | null;
  readonly pipeline: string | null;
  readonly rank: number;
}

function Selector({
  label,
  testid,
  value,
  options,
  onChange,
}: {
  label: string;
  testid: string;
  value: string;
  options: readonly (readonly [string, string])[];
  onChange: (value: string) => void;
}) {
  return (
    <label class="tfdata-selector">
      {label}{" "}
      <select
        data-testid={testid}
        value={value}
        onChange={(event) => onChange(event.currentTarget.value)}
      >
        {options.map(([optionValue, text]) => (
          <option key={optionValue} value={optionValue}>
            {text}
          </option>
        ))}
      </select>
    </label>
  );
}

export function TfDataBottleneckAnalysis({ doc, run, view, host, onView }: ViewProps) {
  const summary = useMemo(() => summaryOf(doc["summary"]), [doc]);
  const bottlenecks = useMemo(() => bottlenecksOf(doc["bottlenecks"]), [doc]);
  const pipelines = useMemo(() => pipelinesOf(doc["pipelines"]), [doc]);
  const graphs = useMemo(() => graphsOf(doc["graphs"]), [doc]);
  const diagnostics = diagnosticsOf(doc);
  const [choice, setChoice] = useState<Choice>({
    host: summary.host || null,
    pipeline: summary.input_pipeline || null,
    rank: 1,
  });

  const hosts = distinct(graphs.map((g) => g.host));
  const chosenHost = choice.host !== null && hosts.includes(choice.host) ? choice.host : hosts[0];
  const ofHost = graphs.filter((g) => g.host === chosenHost);
  const pipelineNames = distinct(ofHost.map((g) => g.input_pipeline));
  const chosenPipeline =
    choice.pipeline !== null && pipelineNames.includes(choice.pipeline)
      ? choice.pipeline
      : pipelineNames[0];
  const ofPipeline = ofHost.filter((g) => g.input_pipeline === chosenPipeline);
  const graph = ofPipeline.find((g) => g.rank === choice.rank) ?? ofPipeline[0];

  return (
    <div class="analysis-view tf-data" data-testid="tfdata-view">
      <section
        class={`verdict verdict-${summary.is_input_bound ? "highly" : "not"}`}
        data-testid="tfdata-summary"
        data-input-bound={String(summary.is_input_bound)}
        aria-label="Verdict"
      >
        <h3 class="verdict-title">
          {summary.is_input_bound ? "Input-bound in tf.data" : "tf.data is not the bottleneck"}
        </h3>
        <p class="verdict-statement" data-testid="tfdata-message">
          {summary.message || "The server gave no summary."}
        </p>
        {summary.iterator_name ? (
          <p class="tfdata-bottleneck">
            Bottleneck:{" "}
            <strong data-testid="tfdata-bottleneck-name">{summary.iterator_name}</strong>{" "}
            <code data-testid="tfdata-bottleneck-long-name">{summary.iterator_long_name}</code> in{" "}
            {summary.input_pipeline} on {summary.host}
          </p>
        ) : null}
        <VerdictBasis doc={doc} testid="tfdata-verdict-basis" onView={onView} />
      </section>

      {bottlenecks.length ? (
        <Section title="What to change" testid="tfdata-suggestions-section">
          <AdviceList
            advice={bottlenecks[0]?.advice ?? []}
            withheld={bottlenecks[0]?.advice_withheld ?? []}
            testid="tfdata-suggestions"
            itemTestid="tfdata-suggestion"
            empty="Nothing to change was found."
          />
        </Section>
      ) : null}

      <Section
        title="Bottlenecks of the host pipelines, slowest first"
        testid="tfdata-bottlenecks-section"
        aside={
          <CsvLink run={run} view={view} host={host} table="bottlenecks" testid="csv-link" />
        }
      >
        <DataTable
          rows={bottlenecks}
          columns={BOTTLENECK_COLUMNS}
          testid="tfdata-bottlenecks"
          rowTestid="tfdata-bottleneck-row"
          rowKey={(row, index) => `${index} ${row.host} ${row.input_pipeline}`}
          sortable
          empty="No host pipeline call was captured."
        />
      </Section>

      <Section
        title="Input pipelines"
        testid="tfdata-pipelines-section"
        aside={
          <CsvLink run={run} view={view} host={host} table="pipelines" testid="csv-pipelines" />
        }
      >
        <DataTable
          rows={pipelines}
          columns={PIPELINE_COLUMNS}
          testid="tfdata-pipelines"
          rowTestid="tfdata-pipeline-row"
          rowKey={(row, index) => `${index} ${row.host} ${row.input_pipeline}`}
          rowAttributes={(row) => ({ "data-pipeline": row.input_pipeline, "data-host": row.host })}
          sortable
          empty="No input pipeline: see the diagnostics."
        />
      </Section>

      <Section title="Iterator graph of one execution" testid="tfdata-graph-section">
        {graph ? (
          <>
            <div class="view-toolbar tfdata-toolbar">
              <Selector
                label="Host"
                testid="tfdata-host-select"
                value={chosenHost ?? ""}
                options={hosts.map((h) => [h, h] as const)}
                onChange={(value) => setChoice({ host: value, pipeline: null, rank: 1 })}
              />
              <Selector
                label="Pipeline"
                testid="tfdata-pipeline-select"
                value={chosenPipeline ?? ""}
                options={pipelineNames.map((p) => [p, p] as const)}
                onChange={(value) => setChoice({ host: chosenHost ?? null, pipeline: value, rank: 1 })}
              />
              <Selector
                label="Rank"
                testid="tfdata-rank-select"
                value={String(graph.rank)}
                options={ofPipeline.map(
                  (g) => [String(g.rank), `${g.rank}: ${formatUs(g.latency_us)} µs`] as const,
                )}
                onChange={(value) =>
                  setChoice({
                    host: chosenHost ?? null,
                    pipeline: chosenPipeline ?? null,
                    rank: Number(value),
                  })
                }
              />
              <span class="toolbar-note">
                this call took <span data-testid="tfdata-latency">{formatUs(graph.latency_us)}</span>{" "}
                µs; rank 1 is the slowest
              </span>
            </div>
            <p class="hint tfdata-legend">
              Bold outline: on the critical path. Red: the bottleneck. Grey dashed: off the
              critical path (work done ahead of time on another thread).
            </p>
            <TfDataGraphView nodes={graph.nodes} rank={graph.rank} />
          </>
        ) : (
          <p class="hint" data-testid="tfdata-no-graph">
            No execution of an input pipeline was captured.
          </p>
        )}
      </Section>

      <DiagnosticsPanel diagnostics={diagnostics} />
    </div>
  );
}
