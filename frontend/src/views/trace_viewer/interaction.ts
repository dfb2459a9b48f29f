/**
 * Mouse, wheel and keyboard controls of the timeline (documented in frontend/README.md).
 *
 *   ctrl/⌘ + wheel (or a touchpad pinch)   zoom about the pointer
 *   shift + wheel, horizontal wheel         pan in time
 *   wheel                                   scroll the rows (native scrolling)
 *   drag                                    pan in time and scroll the rows
 *   shift + drag, or drag in measure mode   measure an interval (shown on the ruler)
 *   click                                   select the event (details below); click a
 *                                           process header to collapse or expand it; click
 *                                           a hatched density block to zoom into it
 *   hover                                   a note: a block's event count, an event's
 *                                           name and duration, a thread's full name
 *   W / S                                   zoom in / out about the pointer (held: smooth)
 *   A / D                                   pan left / right (held: smooth)
 *   0                                       show the whole trace
 *   Escape                                  clear the measurement, then the selection
 *
 * Keys act while the timeline has focus (it takes the focus when the view opens; a click on
 * it gives it back). A key press moves
 * one step at once, and a held key keeps moving, at a rate per second, on animation frames.
 */
import type { TraceController } from "./controller";

/** Zoom factor per second while W or S is held. */
const ZOOM_PER_S = 8;
/** View widths panned per second while A or D is held. */
const PAN_VIEWS_PER_S = 0.8;
/** The step a single key press makes, as seconds of holding it. */
const TAP_S = 0.1;
/** A press that moves less than this (CSS px) is a click, not a drag. */
const CLICK_SLOP_PX = 3;

export interface InteractionOptions {
  /** Whether plain drags measure instead of panning (the toolbar's measure mode). */
  readonly measureMode: () => boolean;
}

interface Drag {
  readonly pointerId: number;
  readonly x: number;
  readonly y: number;
  readonly scrollTop: number;
  readonly measuring: boolean;
  readonly measureFromUs: number;
  moved: boolean;
  lastX: number;
}

function wheelPixels(event: WheelEvent, delta: number): number {
  if (event.deltaMode === WheelEvent.DOM_DELTA_LINE) return delta * 16;
  if (event.deltaMode === WheelEvent.DOM_DELTA_PAGE) return delta * 400;
  return delta;
}

/** Attaches the controls to the timeline; returns the function that removes them. */
export function attachInteraction(
  controller: TraceController,
  scroller: HTMLDivElement,
  canvas: HTMLCanvasElement,
  options: InteractionOptions,
): () => void {
  let drag: Drag | null = null;
  const held = new Set<string>();
  let animation = 0;
  let lastTick = 0;

  const localX = (event: MouseEvent): number => event.clientX - canvas.getBoundingClientRect().left;
  const localY = (event: MouseEvent): number => event.clientY - canvas.getBoundingClientRect().top;

  const onWheel = (event: WheelEvent): void => {
    if (event.ctrlKey || event.metaKey) {
      event.preventDefault();
      const dy = wheelPixels(event, event.deltaY);
      controller.zoom(Math.exp(-dy * 0.002), localX(event));
      return;
    }
    const dx = wheelPixels(event, event.shiftKey ? event.deltaY || event.deltaX : event.deltaX);
    if (event.shiftKey || Math.abs(event.deltaX) > Math.abs(event.deltaY)) {
      event.preventDefault();
      controller.pan(dx);
    }
    // Otherwise the browser scrolls the rows.
  };

  const onPointerDown = (event: PointerEvent): void => {
    if (event.button !== 0) return;
    scroller.focus({ preventScroll: true });
    const x = localX(event);
    const measuring = options.measureMode() || event.shiftKey;
    drag = {
      pointerId: event.pointerId,
      x,
      y: localY(event),
      scrollTop: scroller.scrollTop,
      measuring,
      measureFromUs: controller.timeAtX(x),
      moved: false,
      lastX: x,
    };
    canvas.setPointerCapture(event.pointerId);
    event.preventDefault();
  };

  const onPointerMove = (event: PointerEvent): void => {
    const x = localX(event);
    controller.pointerX = x;
    if (drag === null) controller.hover(x, localY(event));
    if (drag === null || event.pointerId !== drag.pointerId) return;
    const y = localY(event);
    if (!drag.moved && Math.abs(x - drag.x) + Math.abs(y - drag.y) < CLICK_SLOP_PX) return;
    drag.moved = true;
    if (drag.measuring) {
      controller.setMeasure({ startUs: drag.measureFromUs, endUs: controller.timeAtX(x) });
    } else {
      controller.pan(drag.lastX - x);
      scroller.scrollTop = drag.scrollTop - (y - drag.y);
    }
    drag.lastX = x;
  };

  const onPointerUp = (event: PointerEvent): void => {
    if (drag === null || event.pointerId !== drag.pointerId) return;
    const finished = drag;
    drag = null;
    if (canvas.hasPointerCapture(event.pointerId)) canvas.releasePointerCapture(event.pointerId);
    if (finished.moved) return;
    const hit = controller.hitAt(finished.x, finished.y);
    if (hit.kind === "process") controller.toggleProcess(hit.pid);
    else if (hit.kind === "block") controller.zoomIntoBlock(hit.block, finished.x);
    else if (hit.kind === "event") controller.select(hit.event);
    else if (controller.measure !== null) controller.setMeasure(null);
    else controller.select(null);
  };

  const onPointerLeave = (): void => {
    if (drag === null) controller.pointerX = null;
    controller.hover(null, 0);
  };

  const step = (keys: ReadonlySet<string>, seconds: number): void => {
    if (keys.has("w")) controller.zoom(ZOOM_PER_S ** seconds, controller.pointerX);
    if (keys.has("s")) controller.zoom(ZOOM_PER_S ** -seconds, controller.pointerX);
    const px = PAN_VIEWS_PER_S * seconds * controller.trackWidthPx;
    if (keys.has("a")) controller.pan(-px);
    if (keys.has("d")) controller.pan(px);
  };

  const tick = (now: number): void => {
    animation = 0;
    if (held.size === 0) return;
    step(held, Math.min((now - lastTick) / 1000, 0.05));
    lastTick = now;
    animation = requestAnimationFrame(tick);
  };

  const onKeyDown = (event: KeyboardEvent): void => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key.toLowerCase();
    if (key === "w" || key === "a" || key === "s" || key === "d") {
      event.preventDefault();
      if (held.has(key)) return; // auto-repeat: the animation already runs
      held.add(key);
      step(new Set([key]), TAP_S);
      if (animation === 0) {
        lastTick = performance.now();
        animation = requestAnimationFrame(tick);
      }
    } else if (key === "0") {
      event.preventDefault();
      controller.resetView();
    } else if (key === "escape") {
      if (controller.measure !== null) controller.setMeasure(null);
      else controller.select(null);
    }
  };

  const onKeyUp = (event: KeyboardEvent): void => {
    held.delete(event.key.toLowerCase());
  };

  const onBlur = (): void => held.clear();

  // One signal removes every listener.
  const listening = new AbortController();
  const { signal } = listening;
  scroller.addEventListener("wheel", onWheel, { passive: false, signal });
  scroller.addEventListener("keydown", onKeyDown, { signal });
  scroller.addEventListener("keyup", onKeyUp, { signal });
  scroller.addEventListener("blur", onBlur, { signal });
  canvas.addEventListener("pointerdown", onPointerDown, { signal });
  canvas.addEventListener("pointermove", onPointerMove, { signal });
  canvas.addEventListener("pointerup", onPointerUp, { signal });
  canvas.addEventListener("pointercancel", onPointerUp, { signal });
  canvas.addEventListener("pointerleave", onPointerLeave, { signal });
  return () => {
    if (animation) cancelAnimationFrame(animation);
    listening.abort();
  };
}
