/**
 * <DataTable>: rows of a view's table, optionally sortable by clicking a header, filtered by
 * text boxes and shown a page at a time.
 *
 * Rows keep the server's order until a header is clicked; a click sorts by that column
 * (numbers largest first, text A→Z), a second click reverses it. Sorting is stable (ties keep
 * the server's order). Each filter box keeps rows whose text for that filter contains what
 * was typed, case-insensitively; several boxes must all match.
 *
 * Layout: columns are sized to their content (numbers, badges and short text never wrap and
 * are never clipped; headers wrap between words, so a unit in a header stays visible) and the
 * `ellipsis` columns (names) share the rest in proportion to their longest text, each at
 * least its `width` (default NAME_MIN_WIDTH). A name too long for its cell is cut in the middle
 * (<MiddleText>, keeping what tells it from the column's alike names) and
 * carries the full text in its cell's `title`. When the box is narrower than the columns
 * need, the table scrolls sideways inside its own box rather than clipping a number.
 *
 * With `pageSize`, at most that many rows are in the DOM: a pager walks through the pages
 * (first, previous, next, last, and a page-size choice) and the count of matching rows is
 * always shown, so no row is silently cut. Sorting or filtering goes back to the first page.
 *
 * Hooks, for a table with testid T: `T` (the table), `T-sort-<column>` (header buttons, with
 * `aria-sort` on their <th>), `T-filter` (the first filter box) and `T-filter-<key>` (the
 * others), `T-shown` ("N of M", unpaged tables with a filter), `T-empty`, and per row
 * `rowTestid` with `data-*` from `rowAttributes`; each cell `<rowTestid>-<column>`.
 * Paged tables: `T-row-count` ("52 rows", "12 of 52 rows"; `data-rows`, `data-total`),
 * `T-page` ("Rows 1–100 of 152"; `data-page`, `data-pages`, from 1), `T-page-first`,
 * `T-page-prev`, `T-page-next`, `T-page-last` (buttons), `T-page-size` (a <select>).
 */
import type { ComponentChildren } from "preact";
import { useMemo, useState } from "preact/hooks";
import { differences, MiddleText } from "./middle_text";

export interface Column<Row> {
  readonly key: string;
  readonly label: string;
  /** What the column sorts by; null sorts last. */
  readonly value: (row: Row) => number | string | null;
  /** What the cell shows (default: the value as text). */
  readonly render?: (row: Row) => ComponentChildren;
  readonly numeric?: boolean;
  /** A name: a flexible column, one line cut in the middle, the full text in the title. */
  readonly ellipsis?: boolean;
  /** An `ellipsis` column's least width (CSS, e.g. "7em"; default NAME_MIN_WIDTH). Other
   * columns are as wide as their content and ignore it. */
  readonly width?: string;
  readonly title?: string;
}

/** A filter box: rows match when `text(row)` contains what was typed. */
export interface Filter<Row> {
  readonly key: string;
  /** The box's placeholder and accessible name, e.g. "Filter by op name". */
  readonly label: string;
  readonly text: (row: Row) => string;
}

type Direction = "ascending" | "descending";

const NO_FILTERS: readonly never[] = [];

/** The page sizes a paged table offers. */
export const PAGE_SIZES = [25, 50, 100, 250, 500] as const;

export interface DataTableProps<Row> {
  readonly rows: readonly Row[];
  readonly columns: readonly Column<Row>[];
  readonly testid: string;
  /** Each row's hook (and its cells' prefix): one for all rows, or per row. */
  readonly rowTestid: string | ((row: Row) => string);
  readonly rowAttributes?: (row: Row) => Readonly<Record<string, string>>;
  readonly rowKey: (row: Row, index: number) => string;
  readonly sortable?: boolean;
  /** Filter boxes, in order (the first has the hook `T-filter`); pass a constant list. */
  readonly filters?: readonly Filter<Row>[];
  /** Shows this many rows at a time, with a pager (one of PAGE_SIZES). */
  readonly pageSize?: number;
  readonly empty: ComponentChildren;
  readonly caption?: string;
  /** Many columns: narrower cell padding, so a wide table (kernel stats) fits 1280 px. */
  readonly dense?: boolean;
}

function compare(a: number | string | null, b: number | string | null): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b));
}

function cellText(value: number | string | null): string {
  return value === null ? "—" : String(value);
}

/** A name column's least width when it names none. */
export const NAME_MIN_WIDTH = "7.5em";
/** The names' shares add up to this much of the table (100 % would leave the others none). */
const NAMES_PERCENT = 80;
/** A name column's share of the spare width follows its longest text, within these bounds
 * (characters), so "TensorFlow" categories do not take the room long op paths need. */
const SHARE_MIN_CHARS = 6;
const SHARE_MAX_CHARS = 80;

/** Each column's class and style: names flexible (share of the spare width), others content. */
function columnLayout<Row>(
  columns: readonly Column<Row>[],
  rows: readonly Row[],
): { class: string; style?: Record<string, string> }[] {
  const share = (column: Column<Row>): number => {
    let longest = SHARE_MIN_CHARS;
    for (const row of rows) longest = Math.max(longest, cellText(column.value(row)).length);
    return Math.min(longest, SHARE_MAX_CHARS);
  };
  const shares = columns.map((column) => (column.ellipsis ? share(column) : 0));
  const total = shares.reduce((sum, part) => sum + part, 0);
  return columns.map((column, index) => {
    if (!column.ellipsis) return { class: column.numeric ? "num fit" : "fit" };
    const percent = ((NAMES_PERCENT * (shares[index] ?? 0)) / total).toFixed(1);
    return {
      class: "name",
      style: { width: `${percent}%`, minWidth: column.width ?? NAME_MIN_WIDTH },
    };
  });
}

function filterTestid(testid: string, key: string, index: number): string {
  return index === 0 ? `${testid}-filter` : `${testid}-filter-${key}`;
}

function rowsText(shown: number, total: number): string {
  const noun = total === 1 ? "row" : "rows";
  return shown === total ? `${total} ${noun}` : `${shown} of ${total} ${noun}`;
}

export function DataTable<Row>(props: DataTableProps<Row>) {
  const { rows, columns, testid, rowTestid, sortable = false, filters = NO_FILTERS } = props;
  const paged = props.pageSize !== undefined;
  const [sort, setSort] = useState<{ key: string; direction: Direction } | null>(null);
  const [needles, setNeedles] = useState<Readonly<Record<string, string>>>({});
  const [page, setPage] = useState(0);
  const [pageSize, setPageSize] = useState(props.pageSize ?? PAGE_SIZES[2]);

  const shown = useMemo(() => {
    let indexed = rows.map((row, index) => ({ row, index }));
    for (const filter of filters) {
      const needle = (needles[filter.key] ?? "").trim().toLowerCase();
      if (needle)
        indexed = indexed.filter(({ row }) => filter.text(row).toLowerCase().includes(needle));
    }
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
  }, [rows, columns, sort, needles, filters]);

  const pages = paged ? Math.max(1, Math.ceil(shown.length / pageSize)) : 1;
  const current = Math.min(page, pages - 1); // fewer rows than before (a new document)
  const first = paged ? current * pageSize : 0;
  const visible = paged ? shown.slice(first, first + pageSize) : shown;

  const onSort = (column: Column<Row>): void => {
    setPage(0);
    setSort((previous) =>
      previous?.key === column.key
        ? {
            key: column.key,
            direction: previous.direction === "ascending" ? "descending" : "ascending",
          }
        : { key: column.key, direction: column.numeric ? "descending" : "ascending" },
    );
  };

  const onFilter = (key: string, value: string): void => {
    setPage(0);
    setNeedles((previous) => ({ ...previous, [key]: value }));
  };

  const layout = useMemo(() => columnLayout(columns, rows), [columns, rows]);
  // Per name column: where each name differs from the column's others, so that a cut keeps
  // what tells alike names apart (middle_text.tsx, `differences`).
  const differing = useMemo(
    () =>
      columns.map((column) => {
        if (!column.ellipsis) return null;
        const texts: string[] = [];
        for (const row of rows) {
          const content = column.render ? column.render(row) : cellText(column.value(row));
          if (typeof content === "string") texts.push(content);
        }
        return differences(texts);
      }),
    [columns, rows],
  );

  const table = (
    <table class={props.dense ? "data-table fitted dense" : "data-table fitted"} data-testid={testid}>
      {props.caption ? <caption>{props.caption}</caption> : null}
      <thead>
        <tr>
          {columns.map((column, index) => {
            const state = sort?.key === column.key ? sort.direction : undefined;
            return (
              <th
                key={column.key}
                class={layout[index]?.class}
                style={layout[index]?.style}
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
        {visible.map(({ row, index }) => {
          const rowId = typeof rowTestid === "string" ? rowTestid : rowTestid(row);
          return (
            <tr
              key={props.rowKey(row, index)}
              data-testid={rowId}
              {...(props.rowAttributes ? props.rowAttributes(row) : {})}
            >
              {columns.map((column, index) => {
                const value = column.value(row);
                const content = column.render ? column.render(row) : cellText(value);
                return (
                  <td
                    key={column.key}
                    class={layout[index]?.class}
                    data-testid={`${rowId}-${column.key}`}
                    title={column.ellipsis ? cellText(value) : undefined}
                  >
                    {column.ellipsis && typeof content === "string" ? (
                      <MiddleText text={content} difference={differing[index]?.get(content)} />
                    ) : (
                      content
                    )}
                  </td>
                );
              })}
            </tr>
          );
        })}
      </tbody>
    </table>
  );

  return (
    <div class="data-table-wrap">
      {filters.length > 0 || paged ? (
        <div class="table-tools">
          {filters.map((filter, index) => (
            <input
              key={filter.key}
              type="search"
              class="table-filter"
              data-testid={filterTestid(testid, filter.key, index)}
              placeholder={filter.label}
              aria-label={filter.label}
              value={needles[filter.key] ?? ""}
              onInput={(event) =>
                onFilter(filter.key, (event.currentTarget as HTMLInputElement).value)
              }
            />
          ))}
          {paged ? (
            <span
              class="table-shown"
              data-testid={`${testid}-row-count`}
              data-rows={String(shown.length)}
              data-total={String(rows.length)}
            >
              {rowsText(shown.length, rows.length)}
            </span>
          ) : (
            <span class="table-shown" data-testid={`${testid}-shown`}>
              {shown.length} of {rows.length}
            </span>
          )}
        </div>
      ) : null}
      <div class="data-table-scroll">{table}</div>
      {shown.length === 0 ? (
        <p class="table-empty" data-testid={`${testid}-empty`}>
          {rows.length === 0 ? props.empty : "No row matches the filter."}
        </p>
      ) : null}
      {paged ? (
        <Pager
          testid={testid}
          page={current}
          pages={pages}
          first={first}
          count={visible.length}
          total={shown.length}
          pageSize={pageSize}
          onPage={setPage}
          onPageSize={(size) => {
            setPage(Math.floor(first / size));
            setPageSize(size);
          }}
        />
      ) : null}
    </div>
  );
}

interface PagerProps {
  readonly testid: string;
  /** The page shown, from 0. */
  readonly page: number;
  readonly pages: number;
  /** Index of the first row shown, among the matching rows. */
  readonly first: number;
  readonly count: number;
  readonly total: number;
  readonly pageSize: number;
  readonly onPage: (page: number) => void;
  readonly onPageSize: (size: number) => void;
}

function Pager(props: PagerProps) {
  const { testid, page, pages, first, count, total, onPage } = props;
  const range = total === 0 ? "No rows" : `Rows ${first + 1}–${first + count} of ${total}`;
  const button = (key: string, label: string, target: number, disabled: boolean, title: string) => (
    <button
      type="button"
      class="pager-button"
      data-testid={`${testid}-page-${key}`}
      disabled={disabled}
      title={title}
      aria-label={title}
      onClick={() => onPage(target)}
    >
      {label}
    </button>
  );
  return (
    <nav class="pager" aria-label="Table pages">
      {button("first", "«", 0, page === 0, "First page")}
      {button("prev", "‹", page - 1, page === 0, "Previous page")}
      <span
        class="pager-range"
        data-testid={`${testid}-page`}
        data-page={String(page + 1)}
        data-pages={String(pages)}
      >
        {range}
        {pages > 1 ? ` (page ${page + 1} of ${pages})` : ""}
      </span>
      {button("next", "›", page + 1, page >= pages - 1, "Next page")}
      {button("last", "»", pages - 1, page >= pages - 1, "Last page")}
      <label class="pager-size">
        Rows per page{" "}
        <select
          data-testid={`${testid}-page-size`}
          value={String(props.pageSize)}
          onChange={(event) =>
            props.onPageSize(Number((event.currentTarget as HTMLSelectElement).value))
          }
        >
          {PAGE_SIZES.map((size) => (
            <option key={size} value={String(size)}>
              {size}
            </option>
          ))}
        </select>
      </label>
    </nav>
  );
}
