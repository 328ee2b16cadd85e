// Call records exported as CSV or JSON Lines, for the console's export and the admin API's:
// the text of a whole export made a page of records at a time, so memory stays bounded
// whatever its length.

export type ExportFormat = "csv" | "jsonl";

export const EXPORT_CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: "text/csv; charset=utf-8",
  jsonl: "application/x-ndjson; charset=utf-8",
};

/**
 * Starts a cell a spreadsheet may run as a formula: = + - @, their full-width forms (which
 * some spreadsheets read as the ASCII ones), and whitespace or a NUL (which some strip before
 * looking at the first character).
 */
const FORMULA_START = /^[=+\-@\uFF1D\uFF0B\uFF0D\uFF20\s\0]/;

/**
 * One CSV cell (RFC 4180): quoted when it holds a quote, comma or line break. Text that
 * FORMULA_START matches gets a leading ' so a spreadsheet shows it instead of running it.
 */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return "";
  let text =
    typeof value === "string"
      ? value
      : typeof value === "object"
        ? JSON.stringify(value)
        : typeof value === "number"
          ? plainNumber(value)
          : String(value);
  if (FORMULA_START.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * A number as String() writes it, but never in exponent form: a call's cost in dollars is
 * often below 1e-6 (String gives "1.5e-7"), which spreadsheets in some locales read as text.
 */
export function plainNumber(n: number): string {
  const text = String(n);
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (!m) return text;
  const [, sign, lead, rest = "", exp] = m;
  const e = Number(exp);
  return e < 0 ? `${sign}0.${"0".repeat(-e - 1)}${lead}${rest}` : `${sign}${lead}${rest.padEnd(e, "0")}`;
}

/**
 * The text of an export from its pages: CSV with a header row of `fields` (lines end with CRLF),
 * or one JSON object per line. The first page is read before this returns, so a store
 * failure can still be answered with an error; after that the answer has begun and a
 * failure can only cut it. Later pages are read only as the consumer asks for them.
 */
export async function exportText<T extends object>(
  pages: AsyncGenerator<T[]>,
  format: ExportFormat,
  fields: readonly (keyof T & string)[],
): Promise<AsyncGenerator<string>> {
  const first = await pages.next();
  const line =
    format === "csv"
      ? (r: T) => `${fields.map((f) => csvCell(r[f])).join(",")}\r\n`
      : (r: T) => `${JSON.stringify(r)}\n`;
  async function* text(): AsyncGenerator<string> {
    if (format === "csv") yield `${fields.join(",")}\r\n`;
    if (first.done) return;
    yield first.value.map(line).join("");
    for await (const page of pages) yield page.map(line).join("");
  }
  return text();
}
