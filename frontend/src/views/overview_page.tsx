/**
 * overview_page: how long a step takes, where the time goes, and what to do about it.
 *
 * From the top: the verdict (input-bound or not, coloured by level), figure cards (average
 * step time ± stddev, input share, device compute precision when the profile has a device,
 * the run environment), the stacked step-time chart, the category averages, the top ops
 * (device ops, or host ops when there is no device), the recommendations and the
 * diagnostics. Diagnostics with errors or warnings come first, since they explain what is
 * missing; otherwise last. A profile without steps shows a notice instead of the chart.
 *
 * Hooks: overview-verdict (data-level), overview-verdict-basis with its -text and -link
 * (verdict_basis.tsx: what the verdict measures, a link to the tf.data view),
 * overview-avg-step-ms, overview-step-stddev-ms,
 * overview-min-step-ms, overview-max-step-ms, overview-step-count, overview-input-percent,
 * overview-all-others-percent, overview-precision-16bit, overview-precision-32bit (or
 * overview-precision-none on a device profile without device compute),
 * overview-host-count, overview-device-type, overview-device-cores, step-chart (data-steps),
 * category-row (data-category) with category-{avg,stddev,percent}-<key>, top-ops
 * (data-kind) with top-op-row (data-op-name), recommendation with its evidence and the
 * withheld advice (advice.tsx), steps-csv; the jitted functions
 * table (jitted_functions.tsx) after the top ops, on profiles that ran XLA programs, and the
 * tf.functions table (tf_functions.tsx) on profiles that called tf.functions; PyTorch's
 * step breakdown and GPU figures (pytorch_overview.tsx) on PyTorch profiles with steps.
 */
import { useMemo } from "preact/hooks";
import { DataTable, type Column } from "../components/data_table";
import { AdviceList, adviceOf, withheldOf } from "./advice";
import { DiagnosticsPanel } from "./diagnostics";
import {
  bool,
  formatCount,
  formatFraction,
  formatMs,
  formatPercent,
  list,
  num,
  record,
  str,
} from "./format";
import { StepChart } from "./step_chart";
import {
  bottleneckOf,
  CATEGORY_COLORS,
  CATEGORY_KEYS,
  CATEGORY_LABELS,
  type CategoryKey,
  statsOf,
  stepsOf,
} from "./step_time";
import { diagnosticsOf, type ViewProps } from "./types";
import { Card, CsvLink, Figure, NoSteps, Section, Verdict } from "./widgets";
import { JittedFunctions } from "./jitted_functions";
import { TfFunctions } from "./tf_functions";
import { PytorchBreakdown } from "./pytorch_overview";
import { VerdictBasis } from "./verdict_basis";
import { type XlaFacts, xlaColumns, xlaFactsOf } from "./xla_columns";

interface TopOp extends XlaFacts {
  readonly name: string;
  readonly type: string;
  readonly category: string;
  readonly occurrences: number | null;
  readonly self_time_ms: number | null;
  readonly self_time_fraction: number | null;
  readonly cumulative_time_fraction: number | null;
}

function topOpsOf(value: unknown): readonly TopOp[] {
  return list(value).map((item) => {
    const op = record(item);
    return {
      name: str(op["name"]),
      type: str(op["type"]),
      category: str(op["category"]),
      occurrences: num(op["occurrences"]),
      self_time_ms: num(op["self_time_ms"]),
      self_time_fraction: num(op["self_time_fraction"]),
      cumulative_time_fraction: num(op["cumulative_time_fraction"]),
      ...xlaFactsOf(op),
    };
  });
}

type RankedOp = TopOp & { rank: number };

const TOP_OP_COLUMNS: readonly Column<RankedOp>[] = [
  { key: "rank", label: "#", value: (op) => op.rank, numeric: true, width: "2.5em" },
  { key: "name", label: "Op name", value: (op) => op.name, ellipsis: true },
  { key: "type", label: "Type", value: (op) => op.type, ellipsis: true, width: "10em" },
  { key: "category", label: "Category", value: (op) => op.category, ellipsis: true, width: "7em" },
  {
    key: "occurrences",
    label: "Occurrences",
    value: (op) => op.occurrences,
    render: (op) => formatCount(op.occurrences),
    numeric: true,
    width: "6.5em",
  },
  {
    key: "self_time_ms",
    label: "Self time (ms)",
    value: (op) => op.self_time_ms,
    render: (op) => formatMs(op.self_time_ms),
    numeric: true,
    width: "8em",
  },
  {
    key: "self_time_percent",
    label: "Self %",
    title: "Share of all op self time",
    value: (op) => op.self_time_fraction,
    render: (op) => formatFraction(op.self_time_fraction),
    numeric: true,
    width: "5em",
  },
  {
    key: "cumulative_percent",
    label: "Cumulative %",
    value: (op) => op.cumulative_time_fraction,
    render: (op) => formatFraction(op.cumulative_time_fraction),
    numeric: true,
    width: "7.5em",
  },
];

/** The top-op columns, with the XLA facts after the type where the ops carry them. */
function topOpColumns(ops: readonly RankedOp[]): readonly Column<RankedOp>[] {
  const extra = xlaColumns(ops, true);
  if (extra.length === 0) return TOP_OP_COLUMNS;
  const afterType = TOP_OP_COLUMNS.findIndex((column) => column.key === "type") + 1;
  return [...TOP_OP_COLUMNS.slice(0, afterType), ...extra, ...TOP_OP_COLUMNS.slice(afterType)];
}

/** How the server found the steps (`step_rule`), in words. */
const STEP_RULES: Readonly<Record<string, string>> = {
  producer: "the profiler's own step groups",
  executions: "executions of the jitted function",
  marker: "from step markers",
  keras: "Keras step functions",
  loop: "TensorFlow loop iterations",
  legacy: "TraceContext/SessionRun",
};

function stepRuleText(rule: string, module: string): string {
  if (rule === "executions" && module) return `executions of ${module}`;
  return STEP_RULES[rule] ?? `found by rule "${rule}"`;
}

/** A recommendation: prose, then (after its first line break) code, shown preformatted. */
function CategoryTable({ categories }: { categories: Readonly<Record<string, unknown>> }) {
  return (
    <table class="data-table category-table" data-testid="category-table">
      <thead>
        <tr>
          <th scope="col">Category</th>
          <th scope="col" class="num">
            Avg (ms)
          </th>
          <th scope="col" class="num">
            Stddev (ms)
          </th>
          <th scope="col" class="num" title="Share of all step time">
            % of step
          </th>
        </tr>
      </thead>
      <tbody>
        {CATEGORY_KEYS.map((key: CategoryKey) => {
          const category = record(categories[key]);
          const stats = statsOf(category);
          const percent = num(category["percent"]);
          return (
            <tr
              key={key}
              data-testid="category-row"
              data-category={key}
              class={stats.avg ? undefined : "zero"}
            >
              <td>
                <span
                  class="tbp-swatch"
                  style={{ backgroundColor: CATEGORY_COLORS[key] }}
                  aria-hidden="true"
                />
                {str(category["label"], CATEGORY_LABELS[key])}
              </td>
              <td class="num" data-testid={`category-avg-${key}`}>
                {formatMs(stats.avg)}
              </td>
              <td class="num" data-testid={`category-stddev-${key}`}>
                {formatMs(stats.stddev)}
              </td>
              <td class="num" data-testid={`category-percent-${key}`}>
                {formatPercent(percent)}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

export function OverviewPage({ doc, run, view, host, onView }: ViewProps) {
  const steps = useMemo(() => stepsOf(doc["steps"]), [doc]);
  const stepTime = statsOf(doc["step_time_ms"]);
  const bottleneck = bottleneckOf(doc["bottleneck"]);
  const diagnostics = diagnosticsOf(doc);
  const precision = record(doc["device_compute_precision"]);
  const environment = record(doc["run_environment"]);
  const advice = adviceOf(doc["advice"], doc["recommendations"]);
  const withheld = withheldOf(doc["advice_withheld"]);
  const deviceOps = topOpsOf(doc["top_device_ops"]);
  const hostOps = topOpsOf(doc["top_host_ops"]);
  const percent16 = num(precision["percent_16bit"]);
  const percent32 = num(precision["percent_32bit"]);
  const coreCount = num(environment["device_core_count"]);
  const hasDeviceCompute = (percent16 ?? 0) + (percent32 ?? 0) > 0;
  const hasDevice =
    bool(doc["has_device"]) ?? ((coreCount ?? 0) > 0 || hasDeviceCompute || deviceOps.length > 0);
  // "Top device ops" only where there is a device: a CPU-only profile's ops are the host's.
  const topKind = deviceOps.length > 0 || (hasDevice && hostOps.length === 0) ? "device" : "host";
  const topOps = (topKind === "device" ? deviceOps : hostOps).map((op, index) => ({
    ...op,
    rank: index + 1,
  }));
  const hostnames = list(environment["hostnames"]).map((name) => str(name));
  const hasSteps = steps.length > 0;
  const panel = <DiagnosticsPanel diagnostics={diagnostics} />;

  return (
    <div class="analysis-view overview-page" data-testid="overview-page">
      <Verdict bottleneck={bottleneck} testid="overview-verdict" />
      <VerdictBasis doc={doc} testid="overview-verdict-basis" onView={onView} />

      <div class="cards">
        <Card title="Average step time" testid="card-step-time">
          <p class="card-main">
            <Figure
              testid="overview-avg-step-ms"
              value={hasSteps ? formatMs(stepTime.avg) : "—"}
              unit="ms"
              big
            />
            {hasSteps ? (
              <span class="card-pm">
                ±{" "}
                <Figure
                  testid="overview-step-stddev-ms"
                  value={hasSteps ? formatMs(stepTime.stddev) : "—"}
                  unit="ms"
                />
              </span>
            ) : null}
          </p>
          <p class="card-sub">
            min{" "}
            <Figure
              testid="overview-min-step-ms"
              value={hasSteps ? formatMs(stepTime.min) : "—"}
              unit="ms"
            />
            , max{" "}
            <Figure
              testid="overview-max-step-ms"
              value={hasSteps ? formatMs(stepTime.max) : "—"}
              unit="ms"
            />
          </p>
          <p class="card-sub">
            over <Figure testid="overview-step-count" value={String(steps.length)} />{" "}
            {steps.length === 1 ? "step" : "steps"}
            {hasSteps && str(doc["step_rule"]) ? (
              <span class="card-note" data-testid="overview-step-rule">
                {" "}
                ({stepRuleText(str(doc["step_rule"]), str(doc["step_module"]))})
              </span>
            ) : null}
          </p>
        </Card>
        <Card title="Waiting for input" testid="card-input">
          <p class="card-main">
            <Figure
              testid="overview-input-percent"
              value={hasSteps ? formatPercent(num(doc["input_percent"])) : "—"}
              unit="%"
              big
            />
          </p>
          <p class="card-sub">of the step time</p>
          <p class="card-sub">
            All others:{" "}
            <Figure
              testid="overview-all-others-percent"
              value={hasSteps ? formatPercent(num(doc["all_others_percent"])) : "—"}
              unit="%"
            />
          </p>
        </Card>
        {hasDevice && !hasDeviceCompute ? (
          <Card title="Device compute precision" testid="card-precision">
            <p class="card-sub" data-testid="overview-precision-none">
              No device compute was recorded, so there is no precision to show.
            </p>
          </Card>
        ) : null}
        {hasDevice && hasDeviceCompute ? (
          <Card title="Device compute precision" testid="card-precision">
            <p class="card-main">
              <Figure
                testid="overview-precision-16bit"
                value={formatPercent(percent16)}
                unit="%"
                big
              />
              <span class="card-unit-note"> 16-bit</span>
            </p>
            <p class="card-sub">
              <Figure testid="overview-precision-32bit" value={formatPercent(percent32)} unit="%" />{" "}
              32-bit
            </p>
          </Card>
        ) : null}
        <Card title="Run environment" testid="card-environment">
          <p class="card-main">
            <Figure
              testid="overview-host-count"
              value={formatCount(num(environment["host_count"]))}
              big
            />
            <span class="card-unit-note">
              {" "}
              {num(environment["host_count"]) === 1 ? "host" : "hosts"}
            </span>
          </p>
          <p
            class="card-sub ellipsis"
            title={hostnames.join(", ")}
            data-testid="overview-hostnames"
          >
            {hostnames.join(", ") || "—"}
          </p>
          <p class="card-sub">
            Device:{" "}
            <span data-testid="overview-device-type">{str(environment["device_type"], "—")}</span>
            {", "}
            <Figure testid="overview-device-cores" value={formatCount(coreCount)} />{" "}
            {coreCount === 1 ? "device core" : "device cores"}
          </p>
          <p class="card-sub" title={str(environment["framework_evidence"], "")}>
            Framework:{" "}
            <span data-testid="overview-framework">{str(environment["framework"], "—")}</span>
          </p>
        </Card>
      </div>

      <Section
        title="Step time"
        testid="step-time-section"
        aside={<CsvLink run={run} view={view} host={host} table="steps" testid="steps-csv" />}
      >
        {hasSteps ? <StepChart steps={steps} /> : <NoSteps />}
      </Section>

      <div class="columns">
        <Section title="Step-time breakdown: average per step" testid="category-section">
          <CategoryTable categories={record(doc["categories"])} />
        </Section>
        <Section title="Recommendations" testid="recommendations-section">
          <AdviceList
            advice={advice}
            withheld={withheld}
            testid="recommendations"
            itemTestid="recommendation"
            empty="No recommendations for this profile."
          />
        </Section>
      </div>

      <PytorchBreakdown doc={doc} />

      <Section
        title={topKind === "device" ? "Top device ops" : "Top host ops"}
        testid="top-ops-section"
        aside={
          topKind === "host" ? (
            <span class="hint">No device in this profile: ops that ran on the host.</span>
          ) : undefined
        }
      >
        <div data-testid="top-ops" data-kind={topKind}>
          <DataTable
            rows={topOps}
            columns={topOpColumns(topOps)}
            testid="top-ops-table"
            rowTestid="top-op-row"
            rowKey={(op, index) => `${index} ${op.name}`}
            rowAttributes={(op) => ({ "data-op-name": op.name })}
            empty="No ops with self time in this profile."
          />
        </div>
      </Section>

      <JittedFunctions doc={doc} run={run} view={view} host={host} />
      <TfFunctions doc={doc} run={run} view={view} host={host} />

      {panel}
    </div>
  );
}
