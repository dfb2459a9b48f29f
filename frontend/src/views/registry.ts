/**
 * The renderers and parameters of the views the Profile tab knows, keyed by the view names
 * the API uses (`run_tools`; their list, order and labels are in view_names.ts, which imports
 * no view, so that views and components that name views need not import this module).
 *
 * To add a dedicated renderer: write `views/<name>.tsx` exporting a component that takes
 * ViewProps, and add it to RENDERERS below. A view without an entry is shown by GenericView
 * (diagnostics + a summary of the document), so the server can ship a view before its
 * display exists. A view that takes parameters on its `data` route lists them in PARAMS
 * (their names must also be in location.ts's PARAM_KEYS, which the URL may carry).
 */
import { NO_PARAMS, type ViewParams } from "../location";
import { GenericView } from "./generic";
import { InputPipelineAnalyzer } from "./input_pipeline_analyzer";
import { KernelStats } from "./kernel_stats";
import { MemoryProfile } from "./memory_profile";
import { OverviewPage } from "./overview_page";
import { PodViewer } from "./pod_viewer";
import { ProfileInfo } from "./profile_info";
import { TensorflowStats } from "./tensorflow_stats";
import { TfDataBottleneckAnalysis } from "./tf_data_bottleneck_analysis";
import { TraceViewer } from "./trace_viewer/view";
import type { ViewRenderer } from "./types";
import { isViewName, type ViewName } from "./view_names";

/** Dedicated renderers; views missing here fall back to GenericView. */
const RENDERERS: Partial<Record<ViewName, ViewRenderer>> = {
  overview_page: OverviewPage,
  input_pipeline_analyzer: InputPipelineAnalyzer,
  tensorflow_stats: TensorflowStats,
  kernel_stats: KernelStats,
  memory_profile: MemoryProfile,
  pod_viewer: PodViewer,
  tf_data_bottleneck_analysis: TfDataBottleneckAnalysis,
  trace_viewer: TraceViewer,
  profile_info: ProfileInfo,
};

/** The parameters each view's `data` route takes (docs/api.md); other views take none. */
const PARAMS: Partial<Record<ViewName, readonly string[]>> = {
  tensorflow_stats: ["include_idle"],
  memory_profile: ["memory_id", "start_time_ms", "end_time_ms"],
};

/**
 * What the page asks a view's `data` route for where the URL names no value: the page's
 * defaults, which may differ from the route's own (docs/api.md). TensorFlow stats starts
 * without IDLE, pies and table alike (IDLE is often most of the time: with it every op's
 * share reads near 0 %); the route, and so the CSV and the CLI, keep IDLE by default.
 * The URL carries a parameter only when the user chose it.
 */
const PAGE_DEFAULTS: Partial<Record<ViewName, ViewParams>> = {
  tensorflow_stats: { include_idle: "false" },
};

/** The parameters of a view's `data` request: `params` (as `paramsFor` picks them) over the
 * page's defaults for the view. */
export function dataParamsFor(view: string | null, params: ViewParams): ViewParams {
  const defaults = view !== null && isViewName(view) ? PAGE_DEFAULTS[view] : undefined;
  return defaults ? { ...defaults, ...params } : params;
}

/** The renderer for a view: its dedicated one, or GenericView. */
export function rendererFor(name: string): ViewRenderer {
  return (isViewName(name) ? RENDERERS[name] : undefined) ?? GenericView;
}

/** The parameters among `params` that `view` takes (NO_PARAMS when it takes none of them). */
export function paramsFor(view: string | null, params: ViewParams): ViewParams {
  const names = view !== null && isViewName(view) ? (PARAMS[view] ?? []) : [];
  const picked: Record<string, string> = {};
  for (const name of names) {
    const value = params[name];
    if (value !== undefined) picked[name] = value;
  }
  return Object.keys(picked).length ? picked : NO_PARAMS;
}
