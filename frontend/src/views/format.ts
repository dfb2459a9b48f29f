/**
 * Reading numbers out of view documents, and showing them with fixed decimals.
 *
 * Documents come from the server as JSON; a view never trusts a key to be there or to have
 * the right type. `num()` gives a finite number or null, and every formatter shows null as
 * an em dash, so a missing key reads "—" instead of breaking the view. The decimals are part
 * of the contract with the browser tests, which parse what is shown and compare it with the
 * document within this rounding: milliseconds 3 decimals, microseconds and percentages 1
 * decimal.
 */

export const MISSING = "—";

/** A finite number, or null for anything else (missing key, string, NaN). */
export function num(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** A string, or `fallback` for anything else. */
export function str(value: unknown, fallback = ""): string {
  return typeof value === "string" ? value : fallback;
}

/** An object's keys and values, or an empty record for anything that is not an object. */
export function record(value: unknown): Readonly<Record<string, unknown>> {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/** A list, or an empty list for anything else. */
export function list(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

function fixed(value: number | null, digits: number): string {
  return value === null ? MISSING : value.toFixed(digits);
}

/** Milliseconds, 3 decimals ("64.100"); the unit is shown beside it, not in it. */
export function formatMs(value: number | null): string {
  return fixed(value, 3);
}

/** Microseconds, 1 decimal ("2615.7"): the unit of the op and kernel tables. */
export function formatUs(value: number | null): string {
  return fixed(value, 1);
}

/** A 0–100 percentage, 1 decimal ("64.3"). */
export function formatPercent(value: number | null): string {
  return fixed(value, 1);
}

/** A 0–1 fraction as a percentage, 1 decimal (0.357 -> "35.7"). */
export function formatFraction(value: number | null): string {
  return fixed(value === null ? null : value * 100, 1);
}

/** `part` as a percentage of `total`; null when `part` is missing or `total` is not positive. */
export function percentOf(part: number | null, total: number): number | null {
  return total > 0 && part !== null ? (100 * part) / total : null;
}

/** A count, as a whole number ("128"). */
export function formatCount(value: number | null): string {
  return fixed(value, 0);
}

/** A boolean, or null for anything else. */
export function bool(value: unknown): boolean | null {
  return typeof value === "boolean" ? value : null;
}

/** "1 row", "52 rows": a count with its noun, plural unless it is one. */
export function plural(count: number, noun: string, nouns = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : nouns}`;
}
