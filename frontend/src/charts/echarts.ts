/**
 * ECharts, registered modularly: only the pieces the Profile tab draws with.
 *
 * `echarts/core` plus the bar, line and pie charts, the grid/tooltip/legend/data-zoom components and
 * the canvas renderer; nothing else of ECharts reaches the bundle. Add a chart type or a component
 * here (and to `ChartOption`) when a view needs it. Nothing is fetched at run time; ECharts
 * only sets element styles from JavaScript, which the plugin's CSP allows.
 */
import {
  BarChart,
  type BarSeriesOption,
  LineChart,
  type LineSeriesOption,
  PieChart,
  type PieSeriesOption,
} from "echarts/charts";
import {
  DataZoomComponent,
  type DataZoomComponentOption,
  GridComponent,
  type GridComponentOption,
  LegendComponent,
  type LegendComponentOption,
  TooltipComponent,
  type TooltipComponentOption,
} from "echarts/components";
import { type ComposeOption, init, use } from "echarts/core";
import { CanvasRenderer } from "echarts/renderers";

use([
  BarChart,
  LineChart,
  PieChart,
  GridComponent,
  TooltipComponent,
  LegendComponent,
  DataZoomComponent,
  CanvasRenderer,
]);

/** The options a chart of this app may use (type-checked against the registered parts). */
export type ChartOption = ComposeOption<
  | BarSeriesOption
  | LineSeriesOption
  | PieSeriesOption
  | GridComponentOption
  | TooltipComponentOption
  | LegendComponentOption
  | DataZoomComponentOption
>;

export { init };
