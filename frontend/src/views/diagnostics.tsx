/** The diagnostics panel: a document's errors, warnings and info, each as a list. */
import type { Diagnostics } from "./types";

const CATEGORIES = [
  { key: "errors", label: "Errors", none: "No errors." },
  { key: "warnings", label: "Warnings", none: "No warnings." },
  { key: "info", label: "Info", none: "No notes." },
] as const;

/** Renders all three lists (hooks `diag-errors`, `diag-warnings`, `diag-info`), empty or not. */
export function DiagnosticsPanel({ diagnostics }: { diagnostics: Diagnostics }) {
  return (
    <section class="diagnostics" data-testid="diagnostics" aria-label="Diagnostics">
      {CATEGORIES.map(({ key, label, none }) => {
        const items = diagnostics[key];
        return (
          <div class={`diag diag-${key}${items.length ? "" : " diag-empty"}`} key={key}>
            <h3 class="diag-title">
              {label} <span class="diag-count">{items.length}</span>
            </h3>
            <ul class="diag-list" data-testid={`diag-${key}`}>
              {items.map((text, index) => (
                <li key={index}>{text}</li>
              ))}
            </ul>
            {items.length ? null : <p class="diag-none">{none}</p>}
          </div>
        );
      })}
    </section>
  );
}
