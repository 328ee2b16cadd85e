// Call records: the Today and Last-year views in keyset pages, and the streamed export of a
// whole view as CSV or JSON Lines.
import { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { Account } from "../../../accounts/accounts.ts";
import { CALL_STATUSES, type CallStatus } from "../../../domain/outcomes.ts";
import { utcDay } from "../../../records/days.ts";
import { EXPORT_CONTENT_TYPES, exportText } from "../../../records/export.ts";
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
import type { RecordsAnswer } from "../../../views/console.ts";
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
    const text = await exportText(pages, q.format, RECORD_FIELDS);
    const filename = `records-${q.view}-${utcDay(Date.now())}.${q.format}`;
    // Readable.from asks for the next page only when the client has taken the previous ones
    // (backpressure); when the client goes away the stream is destroyed, which ends the
    // generator and with it the queries.
    return reply
      .header("content-type", EXPORT_CONTENT_TYPES[q.format])
      .header("content-disposition", `attachment; filename="${filename}"`)
      .send(Readable.from(text, { objectMode: false, highWaterMark: 64 * 1024 }));
  });
}
