/**
 * Pieces of chart tooltips. A tooltip is built from DOM nodes with text (never an HTML
 * string), so names from profiles are never parsed as HTML.
 */

/** A new element of class `className`, with `text` as its text when given. */
export function tipElement<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/**
 * The data index a tooltip formatter is called for: of its params (an item tooltip) or of
 * the first of them (an axis tooltip); null when there is none.
 */
export function dataIndexOf(params: unknown): number | null {
  const first: unknown = Array.isArray(params) ? params[0] : params;
  if (first === null || typeof first !== "object") return null;
  const index = (first as { dataIndex?: unknown }).dataIndex;
  return typeof index === "number" ? index : null;
}
