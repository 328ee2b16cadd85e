// Every table of the console: until its rows are there, the loading line, or the error with a
// retry; no rows, the empty message; else the table, scrolling inside its own box when wider
// than the page.
import type { HTMLAttributes, ReactNode } from "react";
import type { Loaded } from "../api.ts";
import type { List } from "../types.ts";
import { ErrorNotice, Loading } from "./Notice.tsx";

export interface Column<T> {
  /** the column's name, also its React key */
  header: string;
  /** a header for screen readers only (e.g. a column of buttons) */
  hideHeader?: boolean;
  cell: (row: T) => ReactNode;
  /** figures: right-aligned */
  num?: boolean;
  /** more classes of the body cells, e.g. "nowrap" */
  className?: string;
  /** a body cell's tooltip */
  title?: (row: T) => string;
  /** the cells name their row (<th scope="row">) */
  rowHeader?: boolean;
}

/** A list the page loads with useApi() as a table's rows, error and retry. */
export function listRows<T>(list: Loaded<List<T>>) {
  return { rows: list.data?.data, error: list.error, onRetry: list.reload };
}

type RowProps = HTMLAttributes<HTMLTableRowElement> & { [data: `data-${string}`]: string };

export function DataTable<T>({
  rows,
  columns,
  rowKey,
  rowProps,
  caption,
  error,
  onRetry,
  loading = "Loading",
  empty,
  boxClassName,
  className,
  footer,
}: {
  /** undefined or null while they load */
  rows: readonly T[] | null | undefined;
  /** false leaves a column out (e.g. one only admins see) */
  columns: readonly (Column<T> | false)[];
  rowKey: (row: T) => string;
  rowProps?: (row: T) => RowProps;
  /** for screen readers */
  caption?: string;
  error?: unknown;
  onRetry?: () => void;
  /** what is loading: "Loading the keys" */
  loading?: string;
  /** shown instead of a table without rows */
  empty?: ReactNode;
  /** classes of the scrolling box besides "table-wrap", e.g. "card" */
  boxClassName?: string;
  /** the table's classes */
  className?: string;
  /** below the table, when it has rows */
  footer?: ReactNode;
}) {
  if (error) return <ErrorNotice error={error} onRetry={onRetry} />;
  if (!rows) return <Loading what={loading} />;
  if (rows.length === 0) return <>{empty}</>;
  const shown = columns.filter((c): c is Column<T> => c !== false);
  return (
    <>
      <div className={boxClassName ? `table-wrap ${boxClassName}` : "table-wrap"}>
        <table className={className}>
          {caption && <caption className="sr-only">{caption}</caption>}
          <thead>
            <tr>
              {shown.map((c) => (
                <th key={c.header} scope="col" className={c.num ? "num" : undefined}>
                  {c.hideHeader ? <span className="sr-only">{c.header}</span> : c.header}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={rowKey(row)} {...rowProps?.(row)}>
                {shown.map((c) => {
                  const className = [c.num && "num", c.className].filter(Boolean).join(" ") || undefined;
                  const title = c.title?.(row);
                  return c.rowHeader ? (
                    <th key={c.header} scope="row" className={className} title={title}>
                      {c.cell(row)}
                    </th>
                  ) : (
                    <td key={c.header} className={className} title={title}>
                      {c.cell(row)}
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {footer}
    </>
  );
}
