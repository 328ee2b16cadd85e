// What the console and the admin API read of agent sessions: an account's sessions, each
// summed from its records (first and last call, calls, tokens, cost, models, client), newest
// activity first in keyset pages, and one session's calls in the order they were made. Read
// through the partial index on (account_id, session_id, created_at) WHERE session_id IS NOT
// NULL (migration 023), whose condition each query states literally so every planner takes it.
import { type Kysely, type SqlBool, sql } from "kysely";
import type { ApiName } from "../domain/api-names.ts";
import { SESSION_ID, type SessionClient } from "../domain/sessions.ts";
import { usd } from "../prices/usd.ts";
import type { Database } from "../store/schema.ts";
import type { CallRecordView, SessionView } from "../views/console.ts";
import { asRecord, type Cursor, EXPORT_PAGE, paged, recordSelect } from "./queries.ts";

type Db = Kysely<Database>;

const named = sql<SqlBool>`r.session_id is not null`;

/** Position in the sessions' order (last call, newest first; then id): a page continues below it. */
export interface SessionCursor {
  last_at: number;
  session_id: string;
}

/** "<last_at>:<session id>": opaque to the clients. */
export function encodeSessionCursor(c: SessionCursor): string {
  return `${c.last_at}:${c.session_id}`;
}

export function decodeSessionCursor(text: string): SessionCursor | undefined {
  const m = /^(\d{1,15}):(.+)$/.exec(text);
  return m && SESSION_ID.test(m[2]!) ? { last_at: Number(m[1]), session_id: m[2]! } : undefined;
}

export interface SessionQuery {
  accountId: string;
  /** only the sessions with a call through this key */
  keyId?: string | undefined;
}

interface SessionRow {
  session_id: string;
  client: string | null;
  first_at: number | string;
  last_at: number | string;
  calls: number | string;
  errors: number | string;
  prompt_tokens: number | string | null;
  completion_tokens: number | string | null;
  total_tokens: number | string | null;
  cost_nanos: number | string | null;
}

/** The models, client APIs and keys of the page's sessions, in one query. */
async function detailsOf(db: Db, accountId: string, ids: readonly string[]) {
  const out = new Map<string, { models: string[]; apis: ApiName[]; keys: SessionView["keys"] }>();
  if (!ids.length) return out;
  const rows = await db
    .selectFrom("call_records as r")
    .leftJoin("api_keys as k", "k.id", "r.key_id")
    .select(["r.session_id", "r.public_model", "r.api", "r.key_id", "k.prefix", "k.name"])
    .where("r.account_id", "=", accountId)
    .where(named)
    .where("r.session_id", "in", ids)
    .groupBy(["r.session_id", "r.public_model", "r.api", "r.key_id", "k.prefix", "k.name"])
    .execute();
  for (const r of rows) {
    const d = out.get(r.session_id!) ?? { models: [], apis: [], keys: [] };
    if (r.public_model && !d.models.includes(r.public_model)) d.models.push(r.public_model);
    // records are written only with an ApiName (records/draft.ts)
    if (!d.apis.includes(r.api as ApiName)) d.apis.push(r.api as ApiName);
    if (r.key_id && !d.keys.some((k) => k.id === r.key_id))
      d.keys.push({ id: r.key_id, prefix: r.prefix ?? null, name: r.name ?? null });
    out.set(r.session_id!, d);
  }
  for (const d of out.values()) {
    d.models.sort();
    d.apis.sort();
  }
  return out;
}

function summaries(db: Db, accountId: string) {
  return db
    .selectFrom("call_records as r")
    .select((eb) => [
      "r.session_id",
      // written only from a CallSession (records/draft.ts); a session's calls share it
      eb.fn.max("r.session_client").as("client"),
      eb.fn.min("r.created_at").as("first_at"),
      eb.fn.max("r.created_at").as("last_at"),
      eb.fn.countAll().as("calls"),
      eb.fn.sum(sql<number>`case when r.status = 'ok' then 0 else 1 end`).as("errors"),
      eb.fn.sum("r.prompt_tokens").as("prompt_tokens"),
      eb.fn.sum("r.completion_tokens").as("completion_tokens"),
      eb.fn.sum("r.total_tokens").as("total_tokens"),
      eb.fn.sum("r.cost_nanos").as("cost_nanos"),
    ])
    .where("r.account_id", "=", accountId)
    .where(named)
    .groupBy("r.session_id");
}

async function asSessions(db: Db, accountId: string, rows: SessionRow[]): Promise<SessionView[]> {
  const details = await detailsOf(
    db,
    accountId,
    rows.map((r) => r.session_id),
  );
  return rows.map((r) => {
    const d = details.get(r.session_id);
    const cost = Number(r.cost_nanos ?? 0);
    return {
      session_id: r.session_id,
      client: r.client as SessionClient | null,
      first_at: Number(r.first_at),
      last_at: Number(r.last_at),
      calls: Number(r.calls),
      errors: Number(r.errors),
      prompt_tokens: Number(r.prompt_tokens ?? 0),
      completion_tokens: Number(r.completion_tokens ?? 0),
      total_tokens: Number(r.total_tokens ?? 0),
      cost_usd: usd(cost),
      cost_nanos: cost,
      models: d?.models ?? [],
      apis: d?.apis ?? [],
      keys: d?.keys ?? [],
    };
  });
}

/**
 * One page of the account's sessions, the one with the latest call first; `next` continues it.
 * Each is summed over all its records the store still keeps (retention prunes old ones).
 */
export async function listSessions(
  db: Db,
  query: SessionQuery,
  options: { limit: number; before?: SessionCursor | undefined },
): Promise<{ data: SessionView[]; next: SessionCursor | null }> {
  let q = summaries(db, query.accountId);
  if (query.keyId !== undefined) {
    const keyId = query.keyId;
    q = q.having(sql<SqlBool>`sum(case when r.key_id = ${keyId} then 1 else 0 end) > 0`);
  }
  const before = options.before;
  if (before)
    q = q.having(sql<SqlBool>`(max(r.created_at), r.session_id) < (${before.last_at}, ${before.session_id})`);
  const rows = (await q
    .orderBy("last_at", "desc")
    .orderBy("r.session_id", "desc")
    .limit(options.limit + 1)
    .execute()) as SessionRow[];
  const data = await asSessions(db, query.accountId, rows.slice(0, options.limit));
  const last = data.at(-1);
  return {
    data,
    next: rows.length > options.limit && last ? { last_at: last.last_at, session_id: last.session_id } : null,
  };
}

/** One session of the account, summed; undefined when the store keeps no call of it. */
export async function findSession(
  db: Db,
  accountId: string,
  sessionId: string,
): Promise<SessionView | undefined> {
  const rows = (await summaries(db, accountId)
    .where("r.session_id", "=", sessionId)
    .execute()) as SessionRow[];
  return rows.length ? (await asSessions(db, accountId, rows))[0] : undefined;
}

/** A page of the session's calls in the order they were made; `next` continues after the last. */
export async function sessionCalls(
  db: Db,
  accountId: string,
  sessionId: string,
  options: { limit: number; after?: Cursor | undefined },
): Promise<{ data: CallRecordView[]; next: Cursor | null }> {
  let q = recordSelect(db)
    .where("r.account_id", "=", accountId)
    .where(named)
    .where("r.session_id", "=", sessionId);
  const after = options.after;
  if (after)
    q = q
      .where("r.created_at", ">=", after.created_at)
      .where((eb) =>
        eb(eb.refTuple("r.created_at", "r.request_id"), ">", eb.tuple(after.created_at, after.request_id)),
      );
  const rows = await q
    .orderBy("r.created_at", "asc")
    .orderBy("r.request_id", "asc")
    .limit(options.limit + 1)
    .execute();
  return paged(rows.map(asRecord), options.limit);
}

/** Every call of the session, in order, in pages of EXPORT_PAGE (read as they are asked for). */
export async function* exportSession(
  db: Db,
  accountId: string,
  sessionId: string,
): AsyncGenerator<CallRecordView[]> {
  let after: Cursor | undefined;
  for (;;) {
    const { data, next } = await sessionCalls(db, accountId, sessionId, { limit: EXPORT_PAGE, after });
    if (data.length) yield data;
    if (!next) return;
    after = next;
  }
}
