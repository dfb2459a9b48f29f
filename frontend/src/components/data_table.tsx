/**
 * <DataTable>: rows of a view's table, optionally sortable by clicking a header and
 * filtered by a text box.
 *
 * Rows keep the server's order until a header is clicked; a click sorts by that column
 * (numbers largest first, text A→Z), a second click reverses it. Sorting is stable (ties keep
 * the server's order). The filter keeps rows whose `filterText` contains the typed text,
 * case-insensitively. Long text cells end in an ellipsis and carry the full text in `title`.
 *
 * Hooks, for a table with testid T: `T` (the table), `T-sort-<column>` (header buttons, with
 * `aria-sort` on their <th>), `T-filter` (the text box), `T-shown` ("N of M"), and per row
 * `rowTestid` with `data-*` from `rowAttributes`; each cell `<rowTestid>-<column>`.
 */
import type { ComponentChildren } from "preact";
import { useMemo, useState } from "preact/hooks";

export interface Column<Row> {
  readonly key: string;
  readonly label: string;
  /** What the column sorts by; null sorts last. */
  readonly value: (row: Row) => number | string | null;
  /** What the cell shows (default: the value as text). */
  readonly render?: (row: Row) => ComponentChildren;
  readonly numeric?: boolean;
  /** Long text: one line, ellipsis, the full text in the cell's title. */
  readonly ellipsis?: boolean;
  /** The column's width (CSS), e.g. "7em"; the table is fixed-layout. */
  readonly width?: string;
  readonly title?: string;
}

type Direction = "ascending" | "descending";

export interface DataTableProps<Row> {
  readonly rows: readonly Row[];
  readonly columns: readonly Column<Row>[];
  readonly testid: string;
  readonly rowTestid: string;
  readonly rowAttributes?: (row: Row) => Readonly<Record<string, string>>;
  readonly rowKey: (row: Row, index: number) => string;
  readonly sortable?: boolean;
  /** Adds the filter box; rows match when this text contains what was typed. */
  readonly filterText?: (row: Row) => string;
  readonly filterLabel?: string;
  readonly empty: ComponentChildren;
  readonly caption?: string;
}

function compare(a: number | string | null, b: number | string | null): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b));
}

function cellText(value: number | string | null): string {
  return value === null ? "—" : String(value);
}

export function DataTable<Row>(props: DataTableProps<Row>) {
  const { rows, columns, testid, rowTestid, sortable = false, filterText } = props;
  const [sort, setSort] = useState<{ key: string; direction: Direction } | null>(null);
  const [filter, setFilter] = useState("");

  const shown = useMemo(() => {
    const needle = filter.trim().toLowerCase();
    let indexed = rows.map((row, index) => ({ row, index }));
    if (filterText && needle)
      indexed = indexed.filter(({ row }) => filterText(row).toLowerCase().includes(needle));
    const column = sort ? columns.find((c) => c.key === sort.key) : undefined;
    if (sort && column) {
      const sign = sort.direction === "ascending" ? 1 : -1;
      indexed = [...indexed].sort((a, b) => {
        const va = column.value(a.row);
        const vb = column.value(b.row);
        // Missing values stay last in either direction.
        const byValue = va === null || vb === null ? compare(va, vb) : sign * compare(va, vb);
        return byValue || a.index - b.index;
      });
    }
    return indexed;
  }, [rows, columns, sort, filter, filterText]);

  const onSort = (column: Column<Row>): void => {
    setSort((current) =>
      current?.key === column.key
        ? {
            key: column.key,
            direction: current.direction === "ascending" ? "descending" : "ascending",
          }
        : { key: column.key, direction: column.numeric ? "descending" : "ascending" },
    );
  };

  return (
    <div class="data-table-wrap">
      {filterText ? (
        <div class="table-tools">
          <input
            type="search"
            class="table-filter"
            data-testid={`${testid}-filter`}
            placeholder={props.filterLabel ?? "Filter"}
            aria-label={props.filterLabel ?? "Filter"}
            value={filter}
            onInput={(event) => setFilter((event.currentTarget as HTMLInputElement).value)}
          />
          <span class="table-shown" data-testid={`${testid}-shown`}>
            {shown.length} of {rows.length}
          </span>
        </div>
      ) : null}
      <table class="data-table" data-testid={testid}>
        {props.caption ? <caption>{props.caption}</caption> : null}
        <colgroup>
          {columns.map((column) => (
            <col key={column.key} style={column.width ? { width: column.width } : undefined} />
          ))}
        </colgroup>
        <thead>
          <tr>
            {columns.map((column) => {
              const state = sort?.key === column.key ? sort.direction : undefined;
              return (
                <th
                  key={column.key}
                  class={column.numeric ? "num" : undefined}
                  scope="col"
                  title={column.title}
                  aria-sort={sortable ? (state ?? "none") : undefined}
                >
                  {sortable ? (
                    <button
                      type="button"
                      class="sort-button"
                      data-testid={`${testid}-sort-${column.key}`}
                      onClick={() => onSort(column)}
                    >
                      {column.label}
                      <span class="sort-mark" aria-hidden="true">
                        {state === "ascending" ? "▲" : state === "descending" ? "▼" : ""}
                      </span>
                    </button>
                  ) : (
                    column.label
                  )}
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>
          {shown.map(({ row, index }) => (
            <tr
              key={props.rowKey(row, index)}
              data-testid={rowTestid}
              {...(props.rowAttributes ? props.rowAttributes(row) : {})}
            >
              {columns.map((column) => {
                const value = column.value(row);
                const content = column.render ? column.render(row) : cellText(value);
                const classes = [column.numeric ? "num" : "", column.ellipsis ? "ellipsis" : ""]
                  .filter(Boolean)
                  .join(" ");
                return (
                  <td
                    key={column.key}
                    class={classes || undefined}
                    data-testid={`${rowTestid}-${column.key}`}
                    title={column.ellipsis ? cellText(value) : undefined}
                  >
                    {content}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
      {shown.length === 0 ? (
        <p class="table-empty" data-testid={`${testid}-empty`}>
          {rows.length === 0 ? props.empty : "No row matches the filter."}
        </p>
      ) : null}
    </div>
  );
}
