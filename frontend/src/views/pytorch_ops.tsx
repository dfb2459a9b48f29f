/**
 * The operators page's PyTorch tables (docs/api.md, tensorflow_stats `pytorch_ops`,
 * `ops_by_input_shape`): per operator its calls, host self and total time and the device time
 * of the kernels, copies and memsets it launched, with their shares; then, where the trace
 * recorded shapes (one host, `record_shapes=True`), the same operators split by their input
 * dimensions. Both sortable, filterable by op name, 100 rows a page, downloadable as CSV (tables
 * `pytorch_ops` and `ops_by_input_shape`). Shown only on PyTorch runs (the keys are absent
 * otherwise). Times in µs (1 decimal), shares in % (1 decimal).
 *
 * Hooks: pytorch-ops-section with the table `pytorch-ops` (rows pytorch-op-row, data-op-name;
 * cells pytorch-op-row-<column>) and pytorch-ops-csv; pytorch-shapes-section with the table
 * `pytorch-shapes` (rows pytorch-shape-row, data-op-name, data-input-dims; cells
 * pytorch-shape-row-<column>) and pytorch-shapes-csv; pytorch-shapes-none (no shapes table).
 */
import { DataTable, type Column, type Filter } from "../components/data_table";
import { list, num, record, str } from "./format";
import { countColumn, fractionColumn, usColumn } from "./number_columns";
import { CsvLink, type DocSectionProps, Section } from "./widgets";

export interface PytorchOpRow {
  readonly op_name: string;
  readonly calls: number | null;
  readonly host_self_time_us: number | null;
  readonly host_total_time_us: number | null;
  readonly host_self_time_fraction: number | null;
  readonly device_self_time_us: number | null;
  readonly device_self_time_fraction: number | null;
}

export interface ShapeRow {
  readonly op_name: string;
  readonly input_dims: string;
  readonly calls: number | null;
  readonly total_time_us: number | null;
  readonly self_time_us: number | null;
}

function opsOf(value: unknown): readonly PytorchOpRow[] {
  return list(value).map((item) => {
    const row = record(item);
    return {
      op_name: str(row["op_name"]),
      calls: num(row["calls"]),
      host_self_time_us: num(row["host_self_time_us"]),
      host_total_time_us: num(row["host_total_time_us"]),
      host_self_time_fraction: num(row["host_self_time_fraction"]),
      device_self_time_us: num(row["device_self_time_us"]),
      device_self_time_fraction: num(row["device_self_time_fraction"]),
    };
  });
}

function shapesOf(value: unknown): readonly ShapeRow[] {
  return list(value).map((item) => {
    const row = record(item);
    return {
      op_name: str(row["op_name"]),
      input_dims: str(row["input_dims"]),
      calls: num(row["calls"]),
      total_time_us: num(row["total_time_us"]),
      self_time_us: num(row["self_time_us"]),
    };
  });
}

const OP_COLUMNS: readonly Column<PytorchOpRow>[] = [
  { key: "op_name", label: "Operator", value: (row) => row.op_name, ellipsis: true },
  countColumn<PytorchOpRow>("calls", "Calls", "How many times the operator ran"),
  usColumn<PytorchOpRow>("host_self_time_us", "Host self µs",
    "Host self time (µs): nested operators excluded"),
  usColumn<PytorchOpRow>("host_total_time_us", "Host total µs",
    "Host total time (µs): nested operators included"),
  fractionColumn<PytorchOpRow>("host_self_time_fraction", "Host self %",
    "Share of all operators' host self time"),
  usColumn<PytorchOpRow>("device_self_time_us", "Device µs",
    "Device time (µs) of the kernels, copies and memsets the operator launched"),
  fractionColumn<PytorchOpRow>("device_self_time_fraction", "Device %",
    "Share of all operators' device time"),
];

const SHAPE_COLUMNS: readonly Column<ShapeRow>[] = [
  { key: "op_name", label: "Operator", value: (row) => row.op_name, ellipsis: true },
  {
    key: "input_dims",
    label: "Input Dims",
    title: "The operator's input dimensions, as the trace records them",
    value: (row) => row.input_dims,
    ellipsis: true,
    width: "9em",
  },
  countColumn<ShapeRow>("calls", "Calls", "How many times the operator ran with these inputs"),
  usColumn<ShapeRow>("total_time_us", "Total µs", "Host total time (µs)"),
  usColumn<ShapeRow>("self_time_us", "Self µs", "Host self time (µs)"),
];

function opNameFilters<Row extends { readonly op_name: string }>(): readonly Filter<Row>[] {
  return [{ key: "op_name", label: "Filter by operator", text: (row) => row.op_name }];
}

const OP_FILTERS = opNameFilters<PytorchOpRow>();
const SHAPE_FILTERS = opNameFilters<ShapeRow>();

export function PytorchOpTables({ doc, run, view, host }: DocSectionProps) {
  if (!Array.isArray(doc["pytorch_ops"])) return null;
  const ops = opsOf(doc["pytorch_ops"]);
  const hasShapes = Array.isArray(doc["ops_by_input_shape"]);
  const shapes = shapesOf(doc["ops_by_input_shape"]);
  return (
    <>
      <Section
        title="PyTorch operators: host and device time"
        testid="pytorch-ops-section"
        aside={<CsvLink run={run} view={view} host={host} table="pytorch_ops"
          testid="pytorch-ops-csv" />}
      >
        <DataTable
          rows={ops}
          columns={OP_COLUMNS}
          testid="pytorch-ops"
          rowTestid="pytorch-op-row"
          rowKey={(row, i) => `${i} ${row.op_name}`}
          rowAttributes={(row) => ({ "data-op-name": row.op_name })}
          sortable
          filters={OP_FILTERS}
          pageSize={100}
          empty={<span>No PyTorch operator ran.</span>}
        />
      </Section>
      {hasShapes ? (
        <Section
          title="PyTorch operators by input shape"
          testid="pytorch-shapes-section"
          aside={<CsvLink run={run} view={view} host={host} table="ops_by_input_shape"
            testid="pytorch-shapes-csv" />}
        >
          <DataTable
            rows={shapes}
            columns={SHAPE_COLUMNS}
            testid="pytorch-shapes"
            rowTestid="pytorch-shape-row"
            rowKey={(row, i) => `${i} ${row.op_name} ${row.input_dims}`}
            rowAttributes={(row) => ({
              "data-op-name": row.op_name,
              "data-input-dims": row.input_dims,
            })}
            sortable
            filters={SHAPE_FILTERS}
            pageSize={100}
            empty={<span>No operator recorded its input shapes.</span>}
          />
        </Section>
      ) : (
        <p class="hint" data-testid="pytorch-shapes-none">
          Operators by input shape: shown for one host at a time, on traces recorded with
          record_shapes=True.
        </p>
      )}
    </>
  );
}
