// What the console reads from the call records: the Today and Last-year views (keyset pages,
// newest first), the export of a whole view, and the daily aggregates for the charts.
//
// Indexes these queries rely on (migrations 001 and 005):
// - call_records_account_time (account_id, created_at): the Today view, newest first;
// - call_records_consumption (account_id, created_at, request_id) WHERE total_tokens > 0:
//   the Last-year view and its 1000-record boundary, read from the index alone.
// The partial index is only chosen when the query states `total_tokens > 0` literally (a bound
// parameter would not prove the index's condition), hence the raw SQL for it below.
import { type Expression, type Kysely, type SqlBool, sql } from "kysely";
import type { ApiName } from "../domain/api-names.ts";
import type { CallStatus } from "../domain/outcomes.ts";
import type { SessionClient } from "../domain/sessions.ts";
import { usd } from "../prices/usd.ts";
import type { Database } from "../store/schema.ts";
import type { AdminRecordView } from "../views/admin.ts";
import type { CallRecordView, DailyRow } from "../views/console.ts";
import { startOfUtcDay, utcDay, windowStart } from "./days.ts";

type Db = Kysely<Database>;

export type RecordView = "today" | "year";

/** The Last-year view: the newest this many consumption records of the last YEAR_DAYS UTC days. */
export const YEAR_RECORDS = 1000;
export const YEAR_DAYS = 365;
/**
 * Rows per query while exporting. node:sqlite is synchronous: reading and formatting one page
 * blocks the event loop (about 15-30 ms for 1000 rows on the console benchmark), and every
 * other request, /v1 calls included, waits behind it. 250 keeps each block near 5 ms.
 */
export const EXPORT_PAGE = 250;

export interface RecordQuery {
  accountId: string;
  view: RecordView;
  keyId?: string | undefined;
  model?: string | undefined;
  status?: CallStatus | undefined;
  /** for tests; defaults to the current time */
  now?: number;
}

/** Position in the newest-first order: a page continues after (below) it. */
export interface Cursor {
  created_at: number;
  request_id: string;
}

/**
 * The record fields in the contract's order, then those added since at the end (existing
 * readers of the CSV keep their columns): the CSV's columns.
 */
export const RECORD_FIELDS = [
  "request_id",
  "created_at",
  "key_id",
  "key_prefix",
  "key_name",
  "model",
  "prompt_tokens",
  "completion_tokens",
  "total_tokens",
  "status",
  "http_status",
  "error_code",
  "latency_ms",
  "ttft_ms",
  "stream",
  "params",
  "usage_source",
  "safety_verdict",
  "safety_categories",
  "cached_tokens",
  "cache_write_tokens",
  "reasoning_tokens",
  "cost_usd",
  "cost_nanos",
  "cost_source",
  "api",
  "session_id",
  "session_client",
] as const satisfies readonly (keyof CallRecordView)[];

/** "<created_at>:<request_id>": opaque to the console, stable across instances. */
export function encodeCursor(c: Cursor): string {
  return `${c.created_at}:${c.request_id}`;
}

export function decodeCursor(text: string): Cursor | undefined {
  const m = /^(\d{1,15}):([A-Za-z0-9_-]{1,64})$/.exec(text);
  return m ? { created_at: Number(m[1]), request_id: m[2]! } : undefined;
}

/** What a view covers, worked out once per page or export. */
interface Scope {
  query: RecordQuery;
  from: number;
  /** year view: the oldest of the newest YEAR_RECORDS consumption records (none: fewer exist) */
  boundary: Cursor | undefined;
}

const consumption = sql<SqlBool>`r.total_tokens > 0`;

async function scopeOf(db: Db, query: RecordQuery): Promise<Scope> {
  const now = query.now ?? Date.now();
  if (query.view === "today") return { query, from: startOfUtcDay(now), boundary: undefined };
  const from = windowStart(now, YEAR_DAYS);
  // The 1000th newest consumption record, read from the partial index alone. Filters apply
  // within those 1000, so they play no part here.
  const row = await db
    .selectFrom("call_records as r")
    .select(["r.created_at", "r.request_id"])
    .where("r.account_id", "=", query.accountId)
    .where(consumption)
    .where("r.created_at", ">=", from)
    .orderBy("r.created_at", "desc")
    .orderBy("r.request_id", "desc")
    .limit(1)
    .offset(YEAR_RECORDS - 1)
    .executeTakeFirst();
  return { query, from, boundary: row && { created_at: Number(row.created_at), request_id: row.request_id } };
}

/** The columns of a record as the console and the admin API show it. */
export function recordSelect(db: Db) {
  return db
    .selectFrom("call_records as r")
    .leftJoin("api_keys as k", "k.id", "r.key_id")
    .select([
      "r.request_id",
      "r.created_at",
      "r.account_id",
      "r.key_id",
      "k.prefix as key_prefix",
      "k.name as key_name",
      "r.public_model",
      "r.provider",
      "r.upstream_model",
      "r.api",
      "r.prompt_tokens",
      "r.completion_tokens",
      "r.total_tokens",
      "r.status",
      "r.http_status",
      "r.error_code",
      "r.latency_ms",
      "r.ttft_ms",
      "r.stream",
      "r.params",
      "r.usage_source",
      "r.safety_verdict",
      "r.safety_categories",
      "r.cached_tokens",
      "r.cache_write_tokens",
      "r.reasoning_tokens",
      "r.cost_nanos",
      "r.cost_source",
      "r.session_id",
      "r.session_client",
    ]);
}

type RecordRow = Awaited<ReturnType<ReturnType<typeof recordSelect>["executeTakeFirstOrThrow"]>>;

export function asRecord(r: RecordRow): CallRecordView {
  return {
    request_id: r.request_id,
    created_at: Number(r.created_at),
    key_id: r.key_id,
    key_prefix: r.key_prefix ?? null,
    key_name: r.key_name ?? null,
    model: r.public_model,
    // records are written only with an ApiName (records/draft.ts)
    api: r.api as ApiName,
    prompt_tokens: Number(r.prompt_tokens),
    completion_tokens: Number(r.completion_tokens),
    total_tokens: Number(r.total_tokens),
    // records are written only with a CallStatus (records/draft.ts)
    status: r.status as CallStatus,
    http_status: Number(r.http_status),
    error_code: r.error_code,
    latency_ms: Number(r.latency_ms),
    ttft_ms: r.ttft_ms === null ? null : Number(r.ttft_ms),
    stream: Boolean(Number(r.stream)),
    params: parseJson(r.params),
    usage_source: r.usage_source,
    safety_verdict: r.safety_verdict,
    safety_categories: parseJson(r.safety_categories) as string[] | null,
    cached_tokens: Number(r.cached_tokens),
    cache_write_tokens: Number(r.cache_write_tokens),
    reasoning_tokens: Number(r.reasoning_tokens),
    cost_usd: usd(Number(r.cost_nanos)),
    cost_nanos: Number(r.cost_nanos),
    // written only from a Pricing's source (records/draft.ts)
    cost_source: r.cost_source as CallRecordView["cost_source"],
    session_id: r.session_id,
    // written only from a CallSession (records/draft.ts)
    session_client: r.session_client as SessionClient | null,
  };
}

/** A page's rows and the cursor after its last one (null: the last page). */
export function paged<T extends { created_at: number; request_id: string }>(rows: T[], limit: number) {
  const data = rows.slice(0, limit);
  const last = data.at(-1);
  return {
    data,
    next: rows.length > limit && last ? { created_at: last.created_at, request_id: last.request_id } : null,
  };
}

async function page(db: Db, scope: Scope, limit: number, before: Cursor | undefined) {
  const { query, from, boundary } = scope;
  let q = recordSelect(db)
    .where("r.account_id", "=", query.accountId)
    .where("r.created_at", ">=", boundary ? Math.max(from, boundary.created_at) : from);
  if (query.view === "year") q = q.where(consumption);
  if (boundary) q = q.where((eb) => after(eb, boundary, ">="));
  if (before)
    // the plain bound lets every planner use the index range; the row comparison breaks ties
    q = q.where("r.created_at", "<=", before.created_at).where((eb) => after(eb, before, "<"));
  if (query.keyId !== undefined) q = q.where("r.key_id", "=", query.keyId);
  if (query.model !== undefined) q = q.where("r.public_model", "=", query.model);
  if (query.status !== undefined) q = q.where("r.status", "=", query.status);
  const rows = await q
    .orderBy("r.created_at", "desc")
    .orderBy("r.request_id", "desc")
    .limit(limit + 1)
    .execute();
  return paged(rows.map(asRecord), limit);
}

/** What the admin API filters every account's records by; each filter left out: any. */
export interface RecordSearch {
  /** Unix ms, inclusive */
  from?: number | undefined;
  /** Unix ms, exclusive */
  to?: number | undefined;
  accountId?: string | undefined;
  keyId?: string | undefined;
  model?: string | undefined;
  status?: CallStatus | undefined;
  requestId?: string | undefined;
  api?: ApiName | undefined;
  sessionId?: string | undefined;
}

/** The columns of the admin API's export: the console's, then what only an operator sees, then the sessions. */
export const ADMIN_RECORD_FIELDS = [
  ...RECORD_FIELDS.filter((f) => f !== "session_id" && f !== "session_client"),
  "account_id",
  "account_name",
  "provider",
  "upstream_model",
  // added after the admin API's first columns, so theirs keep their places
  "session_id",
  "session_client",
] as const satisfies readonly (keyof AdminRecordView)[];

async function searchPage(db: Db, s: RecordSearch, limit: number, before: Cursor | undefined) {
  // across accounts, each record says whose it is by name too
  let q = recordSelect(db).leftJoin("accounts as a", "a.id", "r.account_id").select("a.name as account_name");
  if (s.from !== undefined) q = q.where("r.created_at", ">=", s.from);
  if (s.to !== undefined) q = q.where("r.created_at", "<", s.to);
  if (s.accountId !== undefined) q = q.where("r.account_id", "=", s.accountId);
  if (s.keyId !== undefined) q = q.where("r.key_id", "=", s.keyId);
  if (s.model !== undefined) q = q.where("r.public_model", "=", s.model);
  if (s.status !== undefined) q = q.where("r.status", "=", s.status);
  if (s.requestId !== undefined) q = q.where("r.request_id", "=", s.requestId);
  if (s.api !== undefined) q = q.where("r.api", "=", s.api);
  if (s.sessionId !== undefined) q = q.where("r.session_id", "=", s.sessionId);
  if (before) q = q.where("r.created_at", "<=", before.created_at).where((eb) => after(eb, before, "<"));
  const rows = await q
    .orderBy("r.created_at", "desc")
    .orderBy("r.request_id", "desc")
    .limit(limit + 1)
    .execute();
  return paged(
    rows.map(
      (r): AdminRecordView => ({
        ...asRecord(r),
        account_id: r.account_id,
        account_name: r.account_name,
        provider: r.provider,
        upstream_model: r.upstream_model,
      }),
    ),
    limit,
  );
}

/** One page of every account's records that match, newest first; `next` continues it. */
export async function searchRecords(
  db: Db,
  search: RecordSearch,
  options: { limit: number; before?: Cursor | undefined },
): Promise<{ data: AdminRecordView[]; next: Cursor | null }> {
  return searchPage(db, search, options.limit, options.before);
}

/** Every record that matches, newest first, in pages of EXPORT_PAGE (read as they are asked for). */
export async function* exportSearch(db: Db, search: RecordSearch): AsyncGenerator<AdminRecordView[]> {
  let before: Cursor | undefined;
  for (;;) {
    const { data, next } = await searchPage(db, search, EXPORT_PAGE, before);
    if (data.length) yield data;
    if (!next) return;
    before = next;
  }
}

/** (created_at, request_id) compared with a cursor, as one row value. */
function after(eb: any, c: Cursor, op: "<" | ">="): Expression<SqlBool> {
  return eb(eb.refTuple("r.created_at", "r.request_id"), op, eb.tuple(c.created_at, c.request_id));
}

function parseJson(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** One page of a view, newest first; `next` continues it (null at the end). */
export async function listRecords(
  db: Db,
  query: RecordQuery,
  options: { limit: number; before?: Cursor | undefined },
): Promise<{ data: CallRecordView[]; next: Cursor | null }> {
  return page(db, await scopeOf(db, query), options.limit, options.before);
}

/**
 * The whole view, newest first, in pages of EXPORT_PAGE records. The generator only queries
 * the next page when its consumer asks for it, so a slow or vanished client stops the export.
 */
export async function* exportRecords(db: Db, query: RecordQuery): AsyncGenerator<CallRecordView[]> {
  const scope = await scopeOf(db, query);
  let before: Cursor | undefined;
  for (;;) {
    const { data, next } = await page(db, scope, EXPORT_PAGE, before);
    if (data.length) yield data;
    if (!next) return;
    before = next;
  }
}

/** The account's daily aggregates from `days` UTC days ago through today, by key and model. */
export async function dailyUsage(
  db: Db,
  accountId: string,
  days: number,
  now = Date.now(),
): Promise<DailyRow[]> {
  const rows = await db
    .selectFrom("daily_usage as d")
    .leftJoin("api_keys as k", "k.id", "d.key_id")
    .select([
      "d.day",
      "d.key_id",
      "k.prefix",
      "k.name",
      "d.model",
      "d.total_tokens",
      "d.calls",
      "d.cost_nanos",
    ])
    .where("d.account_id", "=", accountId)
    .where("d.day", ">=", utcDay(windowStart(now, days)))
    .orderBy("d.day")
    .orderBy("d.key_id")
    .orderBy("d.model")
    .execute();
  return rows.map((r) => ({
    day: r.day,
    key_id: r.key_id || null,
    key_prefix: r.prefix ?? null,
    key_name: r.name ?? null,
    model: r.model || null,
    tokens: Number(r.total_tokens),
    calls: Number(r.calls),
    cost_nanos: Number(r.cost_nanos),
  }));
}

/** Whether the key exists in the account (deleted keys too: their records stay). */
/**
 * Whether the store holds a call record of this request id under another account. An id it
 * has no record of (pruned by retention, or a call refused before it had an account) is not.
 */
export async function requestOfOtherAccount(db: Db, accountId: string, requestId: string): Promise<boolean> {
  const row = await db
    .selectFrom("call_records")
    .select("account_id")
    .where("request_id", "=", requestId)
    .executeTakeFirst();
  return row !== undefined && row.account_id !== accountId;
}

export async function accountHasKey(db: Db, accountId: string, keyId: string): Promise<boolean> {
  const row = await db
    .selectFrom("api_keys")
    .select("id")
    .where("id", "=", keyId)
    .where("account_id", "=", accountId)
    .executeTakeFirst();
  return row !== undefined;
}
