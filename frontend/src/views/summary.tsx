/** A compact, collapsible key/value summary of a document's top-level keys. */
import { useState } from "preact/hooks";

const MAX_STRING = 160;
const MAX_KEYS_SHOWN = 6;
const MAX_JSON = 50_000;

function clip(text: string, limit: number): string {
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}

function keysPreview(record: object): string {
  const keys = Object.keys(record);
  const shown = keys.slice(0, MAX_KEYS_SHOWN).join(", ");
  return `{${shown}${keys.length > MAX_KEYS_SHOWN ? ", …" : ""}}`;
}

/** One line that says what a value is: `12.5`, `"text"`, `list of 3 {a, b}`, `{a, b} (2 keys)`. */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "string") return JSON.stringify(clip(value, MAX_STRING));
  if (typeof value !== "object") return String(value);
  if (Array.isArray(value)) {
    const first: unknown = value[0];
    const items =
      first !== null && typeof first === "object" && !Array.isArray(first)
        ? ` of ${keysPreview(first)}`
        : "";
    return `list of ${value.length}${items}`;
  }
  const count = Object.keys(value).length;
  return `${keysPreview(value)} (${count} key${count === 1 ? "" : "s"})`;
}

/** Pretty JSON of a value, shown only once its row is opened (documents can be large). */
function JsonDetails({ value }: { value: unknown }) {
  const [open, setOpen] = useState(false);
  return (
    <details
      class="summary-json"
      onToggle={(event) => setOpen((event.currentTarget as HTMLDetailsElement).open)}
    >
      <summary>JSON</summary>
      {open ? <pre>{clip(JSON.stringify(value, null, 2) ?? "null", MAX_JSON)}</pre> : null}
    </details>
  );
}

export function DocumentSummary({
  doc,
  omit = [],
}: {
  doc: Readonly<Record<string, unknown>>;
  omit?: readonly string[];
}) {
  const keys = Object.keys(doc).filter((key) => !omit.includes(key));
  return (
    <details class="summary" open data-testid="doc-summary">
      <summary>
        Document <span class="summary-count">{keys.length} keys</span>
      </summary>
      <dl class="summary-list">
        {keys.map((key) => {
          const value = doc[key];
          const nested = value !== null && typeof value === "object";
          return (
            <div class="summary-row" data-testid="summary-row" data-key={key} key={key}>
              <dt>{key}</dt>
              <dd>
                <span class="summary-value">{describeValue(value)}</span>
                {nested ? <JsonDetails value={value} /> : null}
              </dd>
            </div>
          );
        })}
      </dl>
    </details>
  );
}
