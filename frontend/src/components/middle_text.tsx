/**
 * Middle ellipsis: a long name keeps its start and its end (the part that tells ops, kernels,
 * hosts and sessions apart) and loses its middle, as the CLI's summary does
 * (commands/summary.py `_middle_cut`).
 *
 * `middleCut(text, keep)` keeps `keep` characters, the ellipsis included. `fitMiddle` finds
 * the largest cut whose measured width fits a box (binary search over `keep`, about log2(n)
 * measurements). `measureWith(font)` measures with a shared canvas in a CSS font.
 *
 * <MiddleText text> fills its box (a block, one line) with the cut that fits, refitted when
 * the box is resized (one ResizeObserver for every instance). The whole text stays in the
 * DOM: the cut-out middle is a `display: none` span (so `textContent` is the full name and a
 * find-in-page still sees it), the ellipsis is drawn by CSS before the tail. Hooks:
 * `data-cut="1"` when the middle was cut; `.middle-head`, `.middle-cut`, `.middle-tail`.
 *
 * Names that look alike (`jit(train)/jvp(dense)/dot_general` and `jit(train)/transpose(jvp(
 * dense))/dot_general`; AMD kernels `void ck_tile::kentry<…> .kd]`) would read the same cut
 * in the middle, head and tail being what they share. Given where a name differs from the
 * others of its column (`differences`), a cut that would hide every differing character
 * folds the shared start instead: "jit(t…/transpose(jvp(dense))/dot_general", or, where even
 * that is too long, a window from the difference, "…/transpose(jvp(de…" (`data-fold="1"`;
 * the cell's title keeps the full name).
 */
import { useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";

export const ELLIPSIS = "\u2026";

/** `text` in `keep` characters (the ellipsis included): head, ellipsis, tail. */
export function middleCut(text: string, keep: number): string {
  if (text.length <= keep) return text;
  const [head, , tail] = middleParts(text, keep);
  return head + ELLIPSIS + tail;
}

/** The head, cut-out middle and tail of `text` kept in `keep` characters ("" middle: whole). */
export function middleParts(text: string, keep: number): [string, string, string] {
  if (text.length <= keep) return [text, "", ""];
  const room = Math.max(0, keep - 1);
  const headLength = Math.floor(room / 2);
  const tailLength = room - headLength;
  return [
    text.slice(0, headLength),
    text.slice(headLength, text.length - tailLength),
    text.slice(text.length - tailLength),
  ];
}

/** Where a name differs from each of its nearest names in its column (neighbours in sorted
 * order, by start and by end): per neighbour `[first, end)`, `first` the length of the start
 * they share, `end` the name's length less the length of the end they share. */
export type Difference = readonly (readonly [number, number])[];

function shared(a: string, b: string, fromEnd: boolean): number {
  const n = Math.min(a.length, b.length);
  let k = 0;
  if (fromEnd) while (k < n && a[a.length - 1 - k] === b[b.length - 1 - k]) k++;
  else while (k < n && a[k] === b[k]) k++;
  return k;
}

/** Each distinct text's `Difference` from its nearest others. */
export function differences(texts: readonly string[]): Map<string, Difference> {
  const distinct = [...new Set(texts)];
  const near = new Map<string, Set<string>>(distinct.map((t) => [t, new Set<string>()]));
  for (const fromEnd of [false, true]) {
    const key = (t: string) => (fromEnd ? [...t].reverse().join("") : t);
    const sorted = distinct
      .map((text) => ({ text, key: key(text) }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    sorted.forEach(({ text }, i) => {
      for (const j of [i - 1, i + 1]) {
        const other = sorted[j]?.text;
        if (other !== undefined) near.get(text)?.add(other);
      }
    });
  }
  return new Map(
    distinct.map((text) => [
      text,
      [...(near.get(text) ?? [])].map(
        (other) => [shared(text, other, false), text.length - shared(text, other, true)] as const,
      ),
    ]),
  );
}

/** Where a fold starts showing `text`: the separator at or before `first` (`/`, `(`, a
 * space, ...), so the shown part reads from a boundary ("…/transpose(jvp())/dot_general"). */
function foldPoint(text: string, first: number): number {
  for (let i = Math.min(first, text.length - 1); i > 0; i--) {
    if ("/():;, _.<>[]{}".includes(text[i] ?? "")) return i;
  }
  return 0;
}

/** Whether the shown parts of `text` include, for every neighbour, the first or the last
 * character where the text differs from it. */
function tellsApart(text: string, parts: readonly string[], difference: Difference): boolean {
  const spans: [number, number][] = [];
  let at = 0;
  parts.forEach((part, i) => {
    if (i % 2 === 0 && part) spans.push([at, at + part.length]);
    at += part.length;
  });
  // Its first differing character (after the start they share) or its last (before the end
  // they share) must show: characters between may be the same text shifted.
  const shows = (i: number) => i >= 0 && i < text.length && spans.some(([a, b]) => a <= i && i < b);
  return difference.every(([first, end]) => shows(first) || shows(end - 1));
}

/**
 * `text` in `keep` characters (ellipses included), as alternating shown and cut-out parts
 * (an odd count: shown, cut, shown[, cut, shown]; an ellipsis stands for each cut part). The
 * middle cut (`middleParts`), unless `difference` says it would hide every character where
 * the name differs from a neighbour: then the shared start is folded (head + ellipsis + the
 * rest from the first difference), or where that does not fit or still does not tell the
 * name apart, a window from the first difference between two ellipses.
 */
export function cutParts(
  text: string,
  keep: number,
  difference?: Difference | undefined,
): string[] {
  const parts = middleParts(text, keep);
  if (difference === undefined || difference.length === 0 || parts[1] === "") return parts;
  // The neighbours the middle cut leaves alike: fold from the first place one differs.
  const alike = difference.filter((pair) => !tellsApart(text, parts, [pair]));
  if (alike.length === 0) return parts;
  const first = Math.min(...alike.map(([start]) => start));
  if (first >= text.length) return parts;
  const from = foldPoint(text, first);
  const room = Math.max(0, keep - 1);
  if (text.length - from <= room) {
    const headLength = room - (text.length - from);
    const folded = [text.slice(0, headLength), text.slice(headLength, from), text.slice(from)];
    if (tellsApart(text, folded, difference)) return folded;
  }
  // A window between two ellipses, or a window and the name's end (…window…end): of the
  // windows that start at a place where the name differs from an alike neighbour, the first
  // that tells it from the most neighbours.
  const told = (parts: readonly string[]) =>
    difference.filter((pair) => tellsApart(text, parts, [pair])).length;
  let best: string[] = [];
  let bestTold = -1;
  const firsts = [...new Set([first, ...alike.map(([start]) => start)])].sort((x, y) => x - y);
  for (const withTail of [false, true]) {
    const tail = withTail ? (keep - 2) >> 1 : 0;
    const size = Math.max(1, keep - 2 - tail);
    for (const f of firsts) {
      const snapped = foldPoint(text, f);
      const start = Math.max(0, Math.min(f - snapped < size - 1 ? snapped : f - (size >> 1),
                                         text.length - tail - size));
      const parts = ["", text.slice(0, start), text.slice(start, start + size),
                     text.slice(start + size, text.length - tail), text.slice(text.length - tail)];
      const score = told(parts);
      if (score > bestTold) {
        best = parts;
        bestTold = score;
      }
      if (score === difference.length) return parts;
    }
    if (keep < 6) break;
  }
  return best;
}

/** The text shown for `parts` (cutParts): the shown parts, an ellipsis for each cut one. */
export function shownText(parts: readonly string[]): string {
  return parts.map((part, i) => (i % 2 === 1 ? ELLIPSIS : part)).join("");
}

/** The most characters of `text` a middle cut keeps within `widthPx` (its full length: no cut). */
export function fitMiddle(
  text: string,
  widthPx: number,
  measure: (text: string) => number,
  difference?: Difference | undefined,
): number {
  if (measure(text) <= widthPx) return text.length;
  let lo = 1; // a lone ellipsis: the least a cut shows
  let hi = text.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (measure(shownText(cutParts(text, mid, difference))) <= widthPx) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

let context: CanvasRenderingContext2D | null = null;

/** A measure of text width (CSS px) in `font` (a CSS font shorthand). */
export function measureWith(font: string): (text: string) => number {
  context ??= document.createElement("canvas").getContext("2d");
  return (text) => {
    if (context === null) return text.length * 8;
    context.font = font;
    return context.measureText(text).width;
  };
}

/** The font of `element` as a canvas font string. */
export function fontOf(element: Element): string {
  const style = getComputedStyle(element);
  return `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
}

/** Layout and measurement can disagree by a fraction of a pixel: keep this much spare. */
const SPARE_PX = 1;

type Refit = (widthPx: number) => void;
const watched = new Map<Element, Refit>();
let observer: ResizeObserver | null = null;

function watch(element: Element, refit: Refit): () => void {
  observer ??= new ResizeObserver((entries) => {
    for (const entry of entries) watched.get(entry.target)?.(entry.contentRect.width);
  });
  watched.set(element, refit);
  observer.observe(element);
  return () => {
    watched.delete(element);
    observer?.unobserve(element);
  };
}

/** The content width (CSS px) of the element `ref` holds and a measure in its font, kept up
 * to date as it is resized; null before the first layout. */
export function useBoxWidth(ref: {
  readonly current: Element | null;
}): { widthPx: number; measure: (text: string) => number } | null {
  const [box, setBox] = useState<{ widthPx: number; measure: (text: string) => number } | null>(
    null,
  );
  useLayoutEffect(() => {
    const element = ref.current;
    if (element === null) return undefined;
    const measure = measureWith(fontOf(element));
    return watch(element, (contentPx) => {
      const widthPx = contentPx - SPARE_PX;
      setBox((previous) => (previous?.widthPx === widthPx ? previous : { widthPx, measure }));
    });
  }, [ref]);
  return box;
}

/** One line of `text` cut in the middle to fit its box; the full text in `title` (or `title`).
 * `difference`: where the text differs from its column's others (`differences`). */
export function MiddleText({
  text,
  title,
  class: extra,
  difference,
}: {
  text: string;
  title?: string;
  class?: string;
  difference?: Difference | undefined;
}) {
  const ref = useRef<HTMLSpanElement>(null);
  const box = useBoxWidth(ref);
  const keep = useMemo(
    () => (box === null ? text.length : fitMiddle(text, box.widthPx, box.measure, difference)),
    [text, box, difference],
  );
  const parts = cutParts(text, keep, difference);
  const cut = parts.length > 1 && parts[1] !== "";
  const folded = cut && parts.join("\u0000") !== middleParts(text, keep).join("\u0000");
  return (
    <span
      ref={ref}
      class={extra ? `middle-text ${extra}` : "middle-text"}
      title={title ?? text}
      data-cut={cut ? "1" : undefined}
      data-fold={folded ? "1" : undefined}
    >
      <span class="middle-head">{parts[0]}</span>
      {cut
        ? parts.slice(1).map((part, i) =>
            i % 2 === 0 ? (
              <span key={i} class="middle-cut">
                {part}
              </span>
            ) : (
              <span key={i} class="middle-tail">
                {part}
              </span>
            ),
          )
        : null}
    </span>
  );
}
