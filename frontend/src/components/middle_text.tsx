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

/** The most characters of `text` a middle cut keeps within `widthPx` (its full length: no cut). */
export function fitMiddle(text: string, widthPx: number, measure: (text: string) => number): number {
  if (measure(text) <= widthPx) return text.length;
  let lo = 1; // a lone ellipsis: the least a cut shows
  let hi = text.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (measure(middleCut(text, mid)) <= widthPx) lo = mid;
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

/** One line of `text` cut in the middle to fit its box; the full text in `title` (or `title`). */
export function MiddleText({
  text,
  title,
  class: extra,
}: {
  text: string;
  title?: string;
  class?: string;
}) {
  const ref = useRef<HTMLSpanElement>(null);
  const box = useBoxWidth(ref);
  const keep = useMemo(
    () => (box === null ? text.length : fitMiddle(text, box.widthPx, box.measure)),
    [text, box],
  );
  const [head, middle, tail] = middleParts(text, keep);
  const cut = middle !== "";
  return (
    <span
      ref={ref}
      class={extra ? `middle-text ${extra}` : "middle-text"}
      title={title ?? text}
      data-cut={cut ? "1" : undefined}
    >
      <span class="middle-head">{head}</span>
      {cut ? <span class="middle-cut">{middle}</span> : null}
      {cut ? <span class="middle-tail">{tail}</span> : null}
    </span>
  );
}
