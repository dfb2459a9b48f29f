/**
 * The names of the views the Profile tab knows (the view names the API uses in `run_tools`),
 * their order, and their human labels.
 *
 * A leaf module: it imports no view, so a view (profile_info's table of what each view needs)
 * and the sidebar can name views without importing registry.ts, which imports every view.
 * To add a view, add its name to VIEW_NAMES and its label to LABELS here; its renderer and
 * parameters go in registry.ts.
 */

/** The API's view names, in the order the API lists them. */
export const VIEW_NAMES = [
  "overview_page",
  "input_pipeline_analyzer",
  "tensorflow_stats",
  "trace_viewer",
  "kernel_stats",
  "memory_profile",
  "pod_viewer",
  "tf_data_bottleneck_analysis",
  "profile_info",
] as const;

export type ViewName = (typeof VIEW_NAMES)[number];

const LABELS: Readonly<Record<ViewName, string>> = {
  overview_page: "Overview",
  input_pipeline_analyzer: "Input pipeline",
  tensorflow_stats: "TensorFlow stats",
  trace_viewer: "Trace viewer",
  kernel_stats: "Kernel stats",
  memory_profile: "Memory profile",
  pod_viewer: "Pod viewer",
  tf_data_bottleneck_analysis: "tf.data bottlenecks",
  profile_info: "Profile info",
};

/** Whether `name` is one of the views the Profile tab knows. */
export function isViewName(name: string): name is ViewName {
  return (VIEW_NAMES as readonly string[]).includes(name);
}

/** The human name of a view; a name the registry does not know is made readable. */
export function viewLabel(name: string): string {
  if (isViewName(name)) return LABELS[name];
  const words = name.replace(/_/g, " ").trim();
  return words ? words.charAt(0).toUpperCase() + words.slice(1) : name;
}
