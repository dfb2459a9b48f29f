/**
 * <Chart>: one ECharts instance in a <div>, kept in step with its `option` and its size.
 *
 * The instance is created when the element mounts and disposed when it unmounts; a new
 * `option` object replaces the whole chart (notMerge), so pass a memoised option. The
 * element's size comes from CSS (give it a height); a ResizeObserver follows width changes
 * (sidebar, window, TensorBoard's iframe). Animation is off: a profile is data, not a show,
 * and tests and screenshots see the final picture at once. `setup` runs once on the new
 * instance, e.g. to listen to ECharts events; what it returns runs before the instance goes.
 */
import { useEffect, useRef } from "preact/hooks";
import { type ChartOption, init } from "./echarts";

export type ChartInstance = ReturnType<typeof init>;

export interface ChartProps {
  readonly option: ChartOption;
  /** CSS class(es) of the element; one of them must give it a height. */
  readonly class: string;
  readonly testid: string;
  /** Extra attributes for tests, e.g. `{"data-steps": "12"}`. */
  readonly attributes?: Readonly<Record<string, string>>;
  readonly label: string;
  /** Runs once on the new instance; returns its cleanup. Read only when the chart mounts. */
  readonly setup?: (chart: ChartInstance) => () => void;
}

export function Chart(props: ChartProps) {
  const { option, class: className, testid, attributes, label, setup } = props;
  const element = useRef<HTMLDivElement>(null);
  const instance = useRef<ChartInstance | null>(null);

  useEffect(() => {
    const el = element.current;
    if (!el) return undefined;
    const chart = init(el, undefined, { renderer: "canvas" });
    instance.current = chart;
    let frame = 0;
    const observer = new ResizeObserver(() => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => chart.resize());
    });
    observer.observe(el);
    const cleanup = setup?.(chart);
    return () => {
      cleanup?.();
      cancelAnimationFrame(frame);
      observer.disconnect();
      instance.current = null;
      chart.dispose();
    };
  }, []);

  useEffect(() => {
    instance.current?.setOption({ animation: false, ...option }, { notMerge: true });
  }, [option]);

  return (
    <div
      ref={element}
      class={className}
      data-testid={testid}
      role="img"
      aria-label={label}
      {...attributes}
    />
  );
}
