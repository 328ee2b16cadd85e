// Every account's call records through the admin API: keyset pages, the streamed export (the
// console's CSV and JSON Lines, src/records/export.ts) and the usage aggregates.
import { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import { utcDay } from "../../../records/days.ts";
import { EXPORT_CONTENT_TYPES, exportText } from "../../../records/export.ts";
import {
  ADMIN_RECORD_FIELDS,
  encodeCursor,
  exportSearch,
  type RecordSearch,
  searchRecords,
} from "../../../records/queries.ts";
import { encodeSessionCursor, listSessions } from "../../../records/sessions.ts";
import { usage } from "../../../records/usage.ts";
import type { GatewayDeps } from "../../deps.ts";
import { route } from "./contract.ts";
import { operations as ops } from "./operations.ts";
import {
  RECORDS_DEFAULT_LIMIT,
  SESSIONS_DEFAULT_LIMIT,
  USAGE_DEFAULT_DAYS,
  USAGE_DEFAULT_LIMIT,
} from "./schemas.ts";

interface Filters {
  from?: number | undefined;
  to?: number | undefined;
  account?: string | undefined;
  key?: string | undefined;
  model?: string | undefined;
  status?: RecordSearch["status"];
  request_id?: string | undefined;
  api?: RecordSearch["api"];
  session?: string | undefined;
}

function search(q: Filters): RecordSearch {
  return {
    from: q.from,
    to: q.to,
    accountId: q.account,
    keyId: q.key,
    model: q.model,
    status: q.status,
    requestId: q.request_id,
    api: q.api,
    sessionId: q.session,
  };
}

export async function recordRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  const db = deps.store.db;

  route(app, ops.listRecords, async ({ query }) => {
    const { data, next } = await searchRecords(db, search(query), {
      limit: query.limit ?? RECORDS_DEFAULT_LIMIT,
      before: query.cursor,
    });
    return {
      object: "list" as const,
      data,
      has_more: next !== null,
      next_cursor: next && encodeCursor(next),
    };
  });

  route(app, ops.listSessions, async ({ query }) => {
    const { data, next } = await listSessions(
      db,
      { accountId: query.account, keyId: query.key },
      { limit: query.limit ?? SESSIONS_DEFAULT_LIMIT, before: query.cursor },
    );
    return {
      object: "list" as const,
      data,
      has_more: next !== null,
      next_cursor: next && encodeSessionCursor(next),
    };
  });

  route(app, ops.exportRecords, async ({ query, reply }) => {
    const text = await exportText(exportSearch(db, search(query)), query.format, ADMIN_RECORD_FIELDS);
    // Readable.from reads the next page only as the client takes the previous ones; a client
    // that leaves destroys the stream, which ends the generator and its queries.
    return reply
      .header("content-type", EXPORT_CONTENT_TYPES[query.format])
      .header("content-disposition", `attachment; filename="records-${utcDay(Date.now())}.${query.format}"`)
      .send(Readable.from(text, { objectMode: false, highWaterMark: 64 * 1024 }));
  });

  route(app, ops.getUsage, async ({ query }) => {
    const to = query.to ?? Date.now();
    const from = query.from ?? to - USAGE_DEFAULT_DAYS * 86_400_000;
    const { data, more } = await usage(db, {
      groupBy: query.group_by,
      from,
      to,
      accountId: query.account,
      keyId: query.key,
      model: query.model,
      provider: query.provider,
      limit: query.limit ?? USAGE_DEFAULT_LIMIT,
    });
    return { object: "list" as const, group_by: query.group_by, from, to, has_more: more, data };
  });
}
