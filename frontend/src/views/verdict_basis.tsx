/**
 * What a view's input-bound verdict measures, and a link to the view that judges by the
 * other measure (docs/api.md, `verdict_basis` and `verdict_other_view`).
 *
 * The overview measures the share of step time spent waiting for input; the tf.data
 * bottleneck analysis the latency of each input pipeline call. They can disagree (a slow
 * prefetched pipeline the step never waits for), so each page says what it measures, what
 * the other says, and links to it. The link asks the shell to switch views (ViewProps
 * `onView`), keeping the host when the other view offers it.
 *
 * Hooks: <testid> (data-agrees: "true" | "false" | "unknown") with <testid>-text and
 * <testid>-link (data-view).
 */
import { bool, record, str } from "./format";
import type { ViewDocument } from "./types";

/** The link's words per view (the sidebar's labels, kept here to avoid an import cycle). */
const LINK_LABELS: Readonly<Record<string, string>> = {
  overview_page: "the Overview",
  tf_data_bottleneck_analysis: "the tf.data bottleneck analysis",
};

export function VerdictBasis({
  doc,
  testid,
  onView,
}: {
  doc: ViewDocument;
  testid: string;
  onView?: ((view: string) => void) | undefined;
}) {
  const basis = str(doc["verdict_basis"]);
  if (!basis) return null;
  const other = record(doc["verdict_other_view"]);
  const view = str(other["view"]);
  const agrees = bool(other["agrees"]);
  const label = LINK_LABELS[view] ?? view;
  return (
    <div
      class="verdict-basis"
      data-testid={testid}
      data-agrees={agrees === null ? "unknown" : String(agrees)}
    >
      <p class="verdict-basis-text" data-testid={`${testid}-text`}>
        {basis}
      </p>
      {view && onView ? (
        <button
          type="button"
          class="verdict-basis-link"
          data-testid={`${testid}-link`}
          data-view={view}
          onClick={() => onView(view)}
        >
          {agrees === false ? `See why ${label} says otherwise` : `Open ${label}`}
        </button>
      ) : null}
    </div>
  );
}
