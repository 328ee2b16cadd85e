// Call records: the Today and Last-year views in keyset pages, and the streamed export of a
// whole view as CSV or JSON Lines.
import { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { Account } from "../../../accounts/accounts.ts";
import { CALL_STATUSES, type CallStatus } from "../../../domain/outcomes.ts";
import { utcDay } from "../../../records/days.ts";
import {
  accountHasKey,
  decodeCursor,
  encodeCursor,
  exportRecords,
  listRecords,
  RECORD_FIELDS,
  type RecordQuery,
  type RecordView,
} from "../../../records/queries.ts";
import type { CallRecordView, RecordsAnswer } from "../../../views/console.ts";
import type { GatewayDeps } from "../../deps.ts";
import { accountFor, accountQuery, idParam, notFound, parseInput, queryInt, userOf } from "./context.ts";

const DEFAULT_LIMIT = 100;

const viewFields = {
  ...accountQuery,
  view: z.enum(["today", "year"]).default("today"),
  key: idParam.optional(),
  model: z.string().min(1).max(200).optional(),
  status: z.enum(CALL_STATUSES).optional(),
};

const listQuery = z
  .object({
    ...viewFields,
    limit: queryInt(1, 500).optional(),
    before: z
      .string()
      .transform((text, ctx) => {
        const cursor = decodeCursor(text);
        if (!cursor) {
          ctx.addIssue({ code: "custom", message: "is not a cursor this API returned" });
          return z.NEVER;
        }
        return cursor;
      })
      .optional(),
  })
  .strict();

const exportQuery = z.object({ ...viewFields, format: z.enum(["csv", "jsonl"]).default("csv") }).strict();

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

const csvHeader = `${RECORD_FIELDS.join(",")}\r\n`;
const csvRow = (r: CallRecordView) => `${RECORD_FIELDS.map((f) => csvCell(r[f])).join(",")}\r\n`;
const jsonLine = (r: CallRecordView) => `${JSON.stringify(r)}\n`;

export async function recordRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  /** The view's query, after checking that a named key is the account's. */
  async function viewOf(
    account: Account,
    q: {
      view: RecordView;
      key?: string | undefined;
      model?: string | undefined;
      status?: CallStatus | undefined;
    },
  ): Promise<RecordQuery> {
    if (q.key !== undefined && !(await accountHasKey(deps.store.db, account.id, q.key)))
      throw notFound("key", "key");
    return { accountId: account.id, view: q.view, keyId: q.key, model: q.model, status: q.status };
  }

  app.get("/records", async (request): Promise<RecordsAnswer> => {
    const q = parseInput(listQuery, request.query, "query");
    const account = await accountFor(deps, userOf(request), q.account);
    const { data, next } = await listRecords(deps.store.db, await viewOf(account, q), {
      limit: q.limit ?? DEFAULT_LIMIT,
      before: q.before,
    });
    return { data, next_before: next && encodeCursor(next) };
  });

  app.get("/records/export", async (request, reply) => {
    const q = parseInput(exportQuery, request.query, "query");
    const account = await accountFor(deps, userOf(request), q.account);
    const pages = exportRecords(deps.store.db, await viewOf(account, q));
    // The first page is read before answering, so a store failure still gets an error
    // envelope; after that the status is sent and a failure can only cut the download.
    const first = await pages.next();
    const csv = q.format === "csv";
    async function* body(): AsyncGenerator<string> {
      if (csv) yield csvHeader;
      if (first.done) return;
      const line = csv ? csvRow : jsonLine;
      yield first.value.map(line).join("");
      // Readable.from asks for the next page only when the client has taken the previous
      // ones (backpressure); when the client goes away the stream is destroyed, which ends
      // this generator and with it the queries.
      for await (const page of pages) yield page.map(line).join("");
    }
    const filename = `records-${q.view}-${utcDay(Date.now())}.${q.format}`;
    return reply
      .header("content-type", csv ? "text/csv; charset=utf-8" : "application/x-ndjson; charset=utf-8")
      .header("content-disposition", `attachment; filename="${filename}"`)
      .send(Readable.from(body(), { objectMode: false, highWaterMark: 64 * 1024 }));
  });
}
