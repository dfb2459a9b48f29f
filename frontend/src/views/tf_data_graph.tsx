/**
 * The iterator graph of one execution of a tf.data pipeline, laid out by @dagrejs/dagre and
 * drawn as SVG (consumers above their inputs).
 *
 * Each node is an iterator: its name, then start time, total duration, self time (µs) and
 * number of calls, as SVG text nodes. Critical-path nodes have a bold outline, the bottleneck
 * is red, the other nodes are grey and dashed. Colours are SVG presentation attributes (no
 * inline styles, so a strict content security policy is fine).
 *
 * Hooks: tfdata-graph (data-nodes, data-rank), tfdata-node (data-id, data-name, data-critical,
 * data-bottleneck, data-start-us, data-total-us, data-self-us, data-calls) with a
 * tfdata-node-box rect (its `fill`/`stroke` attributes) and tfdata-node-self / -total /
 * -start / -calls text; tfdata-edge.
 */
import dagre from "@dagrejs/dagre";
import { useMemo } from "preact/hooks";
import { formatCount, formatUs } from "./format";
import type { TfDataNode } from "./tf_data_doc";

const NODE_WIDTH = 210;
const NODE_HEIGHT = 92;
const LINE_HEIGHT = 15;
const MARGIN = 12;

export const NODE_COLOURS = {
  bottleneck: { fill: "#fdecea", stroke: "#d32f2f", width: 3, dash: undefined },
  critical: { fill: "#ffffff", stroke: "#263238", width: 3, dash: undefined },
  other: { fill: "#f5f5f5", stroke: "#9e9e9e", width: 1.5, dash: "5 3" },
} as const;

interface Placed {
  readonly node: TfDataNode;
  readonly x: number;
  readonly y: number;
}

interface Layout {
  readonly nodes: readonly Placed[];
  readonly edges: readonly { readonly key: string; readonly points: string }[];
  readonly width: number;
  readonly height: number;
}

function layoutOf(nodes: readonly TfDataNode[]): Layout {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "TB", nodesep: 24, ranksep: 36, marginx: MARGIN, marginy: MARGIN });
  g.setDefaultEdgeLabel(() => ({}));
  const ids = new Set(nodes.map((n) => n.id));
  for (const node of nodes) g.setNode(node.id, { width: NODE_WIDTH, height: NODE_HEIGHT });
  const edges: [string, string][] = [];
  for (const node of nodes) {
    if (node.parent_id !== null && ids.has(node.parent_id) && node.parent_id !== node.id) {
      g.setEdge(node.parent_id, node.id);
      edges.push([node.parent_id, node.id]);
    }
  }
  dagre.layout(g);
  const label = g.graph();
  const placed = nodes.map((node) => {
    const at = g.node(node.id);
    return { node, x: (at?.x ?? 0) - NODE_WIDTH / 2, y: (at?.y ?? 0) - NODE_HEIGHT / 2 };
  });
  const paths = edges.map(([from, to]) => {
    const points: readonly { x: number; y: number }[] = g.edge(from, to)?.points ?? [];
    return { key: `${from}>${to}`, points: points.map((p) => `${p.x},${p.y}`).join(" ") };
  });
  return {
    nodes: placed,
    edges: paths,
    width: Math.max(label.width ?? 0, NODE_WIDTH + 2 * MARGIN),
    height: Math.max(label.height ?? 0, NODE_HEIGHT + 2 * MARGIN),
  };
}

function colourOf(node: TfDataNode) {
  if (node.is_bottleneck) return NODE_COLOURS.bottleneck;
  return node.on_critical_path ? NODE_COLOURS.critical : NODE_COLOURS.other;
}

function NodeBox({ placed }: { placed: Placed }) {
  const { node, x, y } = placed;
  const colour = colourOf(node);
  const lines: [string, string][] = [
    ["start", `start ${formatUs(node.start_time_us)} µs`],
    ["total", `total ${formatUs(node.total_duration_us)} µs`],
    ["self", `self ${formatUs(node.self_time_us)} µs`],
    ["calls", `${formatCount(node.num_calls)} ${node.num_calls === 1 ? "call" : "calls"}`],
  ];
  return (
    <g
      data-testid="tfdata-node"
      data-id={node.id}
      data-name={node.name}
      data-critical={String(node.on_critical_path)}
      data-bottleneck={String(node.is_bottleneck)}
      data-start-us={String(node.start_time_us ?? "")}
      data-total-us={String(node.total_duration_us ?? "")}
      data-self-us={String(node.self_time_us ?? "")}
      data-calls={String(node.num_calls ?? "")}
      transform={`translate(${x},${y})`}
    >
      <title>{node.long_name}</title>
      <rect
        data-testid="tfdata-node-box"
        width={NODE_WIDTH}
        height={NODE_HEIGHT}
        rx={6}
        fill={colour.fill}
        stroke={colour.stroke}
        stroke-width={colour.width}
        stroke-dasharray={colour.dash}
      />
      <text x={10} y={18} font-weight="bold" class="tfdata-node-name">
        {node.name}
      </text>
      {lines.map(([key, text], index) => (
        <text
          key={key}
          x={10}
          y={18 + LINE_HEIGHT * (index + 1)}
          class="tfdata-node-line"
          data-testid={`tfdata-node-${key}`}
        >
          {text}
        </text>
      ))}
    </g>
  );
}

/** One execution's iterators as a graph (one node per iterator). */
export function TfDataGraphView({ nodes, rank }: { nodes: readonly TfDataNode[]; rank: number }) {
  const layout = useMemo(() => layoutOf(nodes), [nodes]);
  return (
    <div class="tfdata-graph-box">
      <svg
        data-testid="tfdata-graph"
        data-nodes={String(nodes.length)}
        data-rank={String(rank)}
        width={layout.width}
        height={layout.height}
        viewBox={`0 0 ${layout.width} ${layout.height}`}
        role="img"
        aria-label="Iterator graph of the selected execution"
      >
        <defs>
          <marker
            id="tfdata-arrow"
            viewBox="0 0 10 10"
            refX={9}
            refY={5}
            markerWidth={7}
            markerHeight={7}
            orient="auto-start-reverse"
          >
            <path d="M 0 0 L 10 5 L 0 10 z" fill="#78909c" />
          </marker>
        </defs>
        {layout.edges.map((edge) => (
          <polyline
            key={edge.key}
            data-testid="tfdata-edge"
            points={edge.points}
            fill="none"
            stroke="#78909c"
            stroke-width={1.5}
            marker-end="url(#tfdata-arrow)"
          />
        ))}
        {layout.nodes.map((placed) => (
          <NodeBox key={placed.node.id} placed={placed} />
        ))}
      </svg>
    </div>
  );
}
