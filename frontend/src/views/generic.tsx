/** The fallback renderer for a view that has no dedicated one yet: diagnostics + summary. */
import { DiagnosticsPanel } from "./diagnostics";
import { DocumentSummary } from "./summary";
import { diagnosticsOf, type ViewProps } from "./types";

export function GenericView({ doc }: ViewProps) {
  return (
    <div class="generic-view" data-testid="generic-view">
      <p class="generic-note">
        This view has no dedicated display yet; here is what the server computed.
      </p>
      <DocumentSummary doc={doc} omit={["diagnostics"]} />
      <DiagnosticsPanel diagnostics={diagnosticsOf(doc)} />
    </div>
  );
}
