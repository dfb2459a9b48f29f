/**
 * The overview's PyTorch sections (docs/api.md, `pytorch_breakdown`, `gpu_metrics`): the step
 * time in torch-tb-profiler's categories (kernel, memcpy, memset, communication, runtime,
 * DataLoader, CPU exec, other; average ms per step and share of the step time), and per GPU its
 * utilization, estimated SM efficiency and achieved occupancy. Shown only on PyTorch profiles
 * with steps (the keys are absent or empty otherwise).
 *
 * Hooks: pytorch-breakdown-section, pytorch-breakdown-table, pytorch-breakdown-row
 * (data-category) with pytorch-breakdown-{avg,percent}-<key>; gpu-metrics-section,
 * gpu-metrics-row (data-device) with gpu-metrics-{utilization,sm-efficiency,occupancy}.
 */
import { formatMs, formatPercent, list, num, record, str } from "./format";
import { Section } from "./widgets";

const ROLE_KEYS = ["kernel", "memcpy", "memset", "communication", "runtime", "dataloader",
  "cpu_exec", "other"] as const;

export function PytorchBreakdown({ doc }: { doc: Readonly<Record<string, unknown>> }) {
  const breakdown = record(doc["pytorch_breakdown"]);
  const gpus = list(doc["gpu_metrics"]).map(record);
  if (Object.keys(breakdown).length === 0) return null;
  return (
    <div class="columns">
      <Section title="Step time in PyTorch's terms: average per step"
        testid="pytorch-breakdown-section">
        <table class="data-table category-table" data-testid="pytorch-breakdown-table">
          <thead>
            <tr>
              <th scope="col">Category</th>
              <th scope="col" class="num">Avg (ms)</th>
              <th scope="col" class="num" title="Share of all step time">% of step</th>
            </tr>
          </thead>
          <tbody>
            {ROLE_KEYS.map((key) => {
              const role = record(breakdown[key]);
              const avg = num(role["avg"]);
              return (
                <tr key={key} data-testid="pytorch-breakdown-row" data-category={key}
                  class={avg ? undefined : "zero"}>
                  <td>{str(role["label"], key)}</td>
                  <td class="num" data-testid={`pytorch-breakdown-avg-${key}`}>{formatMs(avg)}</td>
                  <td class="num" data-testid={`pytorch-breakdown-percent-${key}`}>
                    {formatPercent(num(role["percent"]))}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </Section>
      {gpus.length > 0 ? (
        <Section title="GPUs over the steps" testid="gpu-metrics-section">
          <table class="data-table" data-testid="gpu-metrics-table">
            <thead>
              <tr>
                <th scope="col">GPU</th>
                <th scope="col" class="num" title="Time some kernel runs, over the step time">
                  Utilization %</th>
                <th scope="col" class="num" title="Kernel time weighted by min(blocks / SMs, 1)">
                  Est. SM efficiency %</th>
                <th scope="col" class="num" title="Kernel-time-weighted est. achieved occupancy">
                  Est. occupancy %</th>
              </tr>
            </thead>
            <tbody>
              {gpus.map((gpu) => (
                <tr key={str(gpu["device"])} data-testid="gpu-metrics-row"
                  data-device={str(gpu["device"])}>
                  <td>{str(gpu["device"])}</td>
                  <td class="num" data-testid="gpu-metrics-utilization">
                    {formatPercent(num(gpu["gpu_utilization_percent"]))}</td>
                  <td class="num" data-testid="gpu-metrics-sm-efficiency">
                    {formatPercent(num(gpu["est_sm_efficiency_percent"]))}</td>
                  <td class="num" data-testid="gpu-metrics-occupancy">
                    {formatPercent(num(gpu["est_achieved_occupancy_percent"]))}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Section>
      ) : null}
    </div>
  );
}
