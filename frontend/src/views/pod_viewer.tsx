/**
 * pod_viewer: every worker's time in one common step, side by side, and the stragglers.
 *
 * From the top: a step slider over the steps common to every host (the server's step
 * intersection); a stacked column per worker (a host, or each GPU of a GPU host) split into
 * the nine categories; a card with the details of the column under the pointer (the slowest
 * column until one is hovered): its host, its own step number, step time, bottleneck and
 * every category; then the straggler table (per step the slowest host, its lag behind the
 * median host and the category that explains it; most lag first; significant rows marked),
 * sortable, filterable by host, downloadable as CSV. Diagnostics say how hosts were aligned.
 *
 * One host (a one-host run, or one host of several): the same page over that host's own steps,
 * with a chart of every step first (one column per step, pod_chart.tsx; hovering a column
 * picks that step) and no straggler table (nothing to compare with).
 *
 * Hooks: pod-viewer (data-steps, data-hosts), pod-slider (an <input type=range>, value = step index),
 * pod-step (the step number shown), pod-chart (see pod_chart.tsx), pod-card with
 * pod-card-label, pod-card-host-step, pod-card-step-time-us, pod-card-bottleneck and
 * pod-card-<category>-us, the table `straggler` (rows `straggler-row`, data-step, data-host,
 * data-significant), straggler-csv, pod-no-steps, pod-steps-chart, pod-one-host.
 *
 * PyTorch runs add, after the stragglers, each rank's communication, computation and overlap
 * and the rank the others wait for (pytorch_ranks.tsx).
 */
import { useCallback, useMemo, useState } from "preact/hooks";
import { DataTable, type Column, type Filter } from "../components/data_table";
import { ALL_HOSTS } from "../components/sidebar";
import { DiagnosticsPanel } from "./diagnostics";
import { formatPercent, formatUs, plural } from "./format";
import { PodChart, PodStepsChart } from "./pod_chart";
import { podDocOf, slowestColumn, type StragglerRow } from "./pod_model";
import { PytorchRanks } from "./pytorch_ranks";
import { CATEGORY_COLORS, CATEGORY_KEYS, CATEGORY_LABELS, type CategoryKey } from "./step_time";
import { diagnosticsOf, type ViewProps } from "./types";
import { Card, CsvLink, Figure, Section } from "./widgets";

function categoryLabel(key: string): string {
  return (CATEGORY_LABELS as Readonly<Record<string, string>>)[key] ?? key;
}

function us(key: "step_time_us" | "median_step_time_us" | "lag_us" | "category_lag_us",
            label: string, title: string): Column<StragglerRow> {
  return {
    key, label, title,
    value: (row) => row[key],
    render: (row) => formatUs(row[key]),
    numeric: true,
    width: "7em",
  };
}

const STRAGGLER_COLUMNS: readonly Column<StragglerRow>[] = [
  { key: "step_num", label: "Step", value: (row) => row.step_num, numeric: true, width: "5em" },
  { key: "host", label: "Slowest host", value: (row) => row.host, ellipsis: true },
  us("step_time_us", "Step µs", "The slowest host's step time (µs)"),
  us("median_step_time_us", "Median µs", "The median host's step time (µs)"),
  us("lag_us", "Lag µs", "How much longer the slowest host took than the median host (µs)"),
  {
    key: "lag_percent",
    label: "Lag %",
    title: "The lag as a share of the median host's step time",
    value: (row) => row.lag_percent,
    render: (row) => formatPercent(row.lag_percent),
    numeric: true,
    width: "5.5em",
  },
  {
    key: "category",
    label: "Explained by",
    title: "The category in which the slowest host spent the most time beyond the median host",
    value: (row) => categoryLabel(row.category),
    width: "10em",
  },
  us("category_lag_us", "Category lag µs", "That category's time beyond the median host (µs)"),
  {
    key: "significant",
    label: "Straggler",
    title: "The lag is at least 10 % of the median step time",
    value: (row) => (row.significant ? "yes" : "no"),
    render: (row) => (
      <span class={`badge badge-${row.significant ? "yes" : "no"}`}>
        {row.significant ? "yes" : "no"}
      </span>
    ),
    width: "6em",
  },
];

const STRAGGLER_FILTERS: readonly Filter<StragglerRow>[] = [
  { key: "host", label: "Filter by host", text: (row) => row.host },
];

export function PodViewer({ doc, run, view, host }: ViewProps) {
  const pod = useMemo(() => podDocOf(doc), [doc]);
  const diagnostics = diagnosticsOf(doc);
  const [position, setPosition] = useState(0);
  const [hovered, setHovered] = useState<number | null>(null);
  const index = Math.min(position, Math.max(0, pod.steps.length - 1));
  const step = pod.steps[index];
  const onHover = useCallback((i: number) => setHovered(i), []);
  const onStepHover = useCallback((i: number) => {
    setPosition(i);
    setHovered(null);
  }, []);
  // One host shown, and one column per step (no GPU columns): its steps side by side.
  const oneHost = host !== ALL_HOSTS;
  const stepColumns = oneHost && pod.steps.every((s) => s.columns.length === 1);
  const onSlide = (event: Event) => {
    setPosition(Number((event.currentTarget as HTMLInputElement).value));
    setHovered(null);
  };
  const columns = step?.columns ?? [];
  const shown = columns[hovered ?? slowestColumn(columns)];

  return (
    <div class="analysis-view pod-viewer" data-testid="pod-viewer" data-steps={pod.steps.length}
         data-hosts={pod.hosts.join(",")}>
      {step === undefined ? (
        oneHost ? (
          <div class="state notice" data-testid="pod-no-steps">
            <strong>No step was found on host {host}</strong>, so there is nothing to show per
            step. The diagnostics below say what was looked for and how to mark steps.
          </div>
        ) : (
          <div class="state notice" data-testid="pod-no-steps">
            <strong>No step is common to every host</strong>, so there is nothing to show side
            by side. The diagnostics below say which steps each host has and why none match.
          </div>
        )
      ) : (
        <>
          {stepColumns ? (
            <Section title={`Every step of ${host}`} testid="pod-steps-section">
              <PodStepsChart steps={pod.steps} onHover={onStepHover} />
            </Section>
          ) : null}
          <Section title="Step time per worker" testid="pod-step-section">
            <label class="pod-slider">
              <span>
                Step <strong data-testid="pod-step">{step.step_num ?? "?"}</strong> (
                {index + 1} of {plural(pod.steps.length, oneHost ? "step" : "common step")}
                {pod.num_steps > pod.steps.length ? `; ${pod.num_steps} in all` : ""})
              </span>
              <input
                type="range"
                min={0}
                max={pod.steps.length - 1}
                step={1}
                value={index}
                onInput={onSlide}
                data-testid="pod-slider"
                aria-label="Step"
              />
            </label>
            <div class="pod-body">
              <PodChart step={step} onHover={onHover} />
              {shown ? (
                <Card title="Worker" testid="pod-card">
                  <p class="card-main" data-testid="pod-card-label">{shown.label}</p>
                  <p>
                    its step <span data-testid="pod-card-host-step">
                      {shown.host_step_num ?? "?"}
                    </span>
                    {": "}
                    <Figure testid="pod-card-step-time-us" value={formatUs(shown.step_time_us)}
                            unit="µs" />
                  </p>
                  <p>
                    bottleneck:{" "}
                    <span data-testid="pod-card-bottleneck">{categoryLabel(shown.bottleneck)}</span>
                  </p>
                  <table class="pod-card-rows">
                    <tbody>
                      {CATEGORY_KEYS.map((key: CategoryKey) => (
                        <tr key={key} class={shown.breakdown_us[key] > 0 ? "" : "tbp-tip-zero"}>
                          <td>
                            <span class="tbp-swatch"
                                  style={{ backgroundColor: CATEGORY_COLORS[key] }} />
                          </td>
                          <td>{CATEGORY_LABELS[key]}</td>
                          <td class="num" data-testid={`pod-card-${key}-us`}>
                            {formatUs(shown.breakdown_us[key])}
                          </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </Card>
              ) : null}
            </div>
          </Section>
          {oneHost ? (
            <p class="hint" data-testid="pod-one-host">
              One host shown: the straggler table compares hosts, so it needs a run of several
              hosts (All hosts).
            </p>
          ) : (
          <Section
            title="Stragglers: the slowest host of each step"
            testid="straggler-section"
            aside={
              <CsvLink run={run} view={view} host={host} table="stragglers"
                       testid="straggler-csv" />
            }
          >
            <DataTable
              rows={pod.stragglers}
              columns={STRAGGLER_COLUMNS}
              testid="straggler"
              rowTestid="straggler-row"
              rowKey={(row, i) => `${row.step_num ?? i}-${row.host}`}
              rowAttributes={(row) => ({
                "data-step": String(row.step_num ?? ""),
                "data-host": row.host,
                "data-significant": row.significant ? "yes" : "no",
              })}
              sortable
              filters={STRAGGLER_FILTERS}
              pageSize={25}
              empty={<span>One host only: nothing to compare.</span>}
            />
          </Section>
          )}
        </>
      )}
      <PytorchRanks doc={doc} />
      <DiagnosticsPanel diagnostics={diagnostics} />
    </div>
  );
}
