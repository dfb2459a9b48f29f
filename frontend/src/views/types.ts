/** The shape every view document shares (docs/api.md, "Every view document"). */
import type { ComponentType } from "preact";
import type { ViewParams } from "../location";

export interface Diagnostics {
  readonly errors: readonly string[];
  readonly warnings: readonly string[];
  readonly info: readonly string[];
}

export interface ViewDocument {
  readonly tool: string;
  readonly version: number;
  readonly run: string;
  readonly host: string;
  readonly diagnostics: Diagnostics;
  readonly [key: string]: unknown;
}

/** What the shell hands every view renderer. */
export interface ViewProps {
  readonly doc: ViewDocument;
  /** The selection that produced `doc` (the document's own fields may differ in spelling). */
  readonly run: string;
  readonly view: string;
  readonly host: string;
  /** The view's parameters as the URL has them (only the ones the view takes; see registry). */
  readonly params: ViewParams;
  /**
   * Asks for the document with other parameters: a new history entry, then a re-fetch. The
   * view stays mounted (with the current document) until the new one arrives. Leave a
   * parameter out to use the server's default.
   */
  readonly onParams: (params: ViewParams) => void;
  /**
   * Switches to another view of the same run (a new history entry), keeping the host where
   * that view offers it, else the shell shows its first host with a notice.
   */
  readonly onView?: (view: string) => void;
}

export type ViewRenderer = ComponentType<ViewProps>;

function strings(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value.map((item) => (typeof item === "string" ? item : JSON.stringify(item)));
}

/** The document's diagnostics as three string lists, whatever the server sent. */
export function diagnosticsOf(doc: { readonly diagnostics?: unknown }): Diagnostics {
  const raw = doc.diagnostics;
  if (raw === null || typeof raw !== "object") return { errors: [], warnings: [], info: [] };
  const record = raw as Record<string, unknown>;
  return {
    errors: strings(record["errors"]),
    warnings: strings(record["warnings"]),
    info: strings(record["info"]),
  };
}
