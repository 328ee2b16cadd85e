// The admin API's usage aggregates (GET /admin/v1/usage): every account's call records of a
// period summed by one dimension, for the console's dashboard (calls, tokens, spend and
// errors over time; the top accounts and keys; latency by provider). Plain SQL aggregates
// that SQLite and PostgreSQL both run; days and hours are UTC, bucketed from the records'
// Unix milliseconds by arithmetic rather than either dialect's date functions.
import { type Expression, type Kysely, sql } from "kysely";
import type { UsageGroup } from "../domain/usage-groups.ts";
import type { Database } from "../store/schema.ts";
import type { UsageRow } from "../views/admin.ts";

type Db = Kysely<Database>;

export interface UsageQuery {
  groupBy: UsageGroup;
  /** Unix ms, inclusive */
  from: number;
  /** Unix ms, exclusive */
  to: number;
  accountId?: string | undefined;
  keyId?: string | undefined;
  model?: string | undefined;
  provider?: string | undefined;
  limit: number;
}

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

function groupExpression(group: UsageGroup): Expression<string | number | null> {
  switch (group) {
    case "model":
      return sql<string | null>`r.public_model`;
    case "provider":
      return sql<string | null>`r.provider`;
    case "account":
      return sql<string | null>`r.account_id`;
    case "key":
      return sql<string | null>`r.key_id`;
    case "status":
      return sql<string>`r.status`;
    case "day":
      return sql<number>`r.created_at - (r.created_at % ${sql.lit(DAY_MS)})`;
    case "hour":
      return sql<number>`r.created_at - (r.created_at % ${sql.lit(HOUR_MS)})`;
  }
}

/** A day's or an hour's start as the answer names it: "2026-11-26", "2026-11-26T13:00Z". */
function periodName(group: "day" | "hour", start: number): string {
  const iso = new Date(start).toISOString();
  return group === "day" ? iso.slice(0, 10) : `${iso.slice(0, 13)}:00Z`;
}

/** The groups, time in order, the others busiest first; `more`: the limit cut the list. */
export async function usage(db: Db, q: UsageQuery): Promise<{ data: UsageRow[]; more: boolean }> {
  const group = groupExpression(q.groupBy);
  const timed = q.groupBy === "day" || q.groupBy === "hour";
  let query = db
    .selectFrom("call_records as r")
    .select([
      sql<string | number | null>`${group}`.as("grp"),
      sql<number>`count(*)`.as("calls"),
      sql<number>`sum(case when r.status in ('error', 'upstream_error') then 1 else 0 end)`.as("errors"),
      sql<number>`sum(r.prompt_tokens)`.as("prompt_tokens"),
      sql<number>`sum(r.completion_tokens)`.as("completion_tokens"),
      sql<number>`sum(r.total_tokens)`.as("total_tokens"),
      sql<number>`sum(r.cost_nanos)`.as("cost_nanos"),
      sql<number | null>`avg(r.latency_ms)`.as("avg_latency_ms"),
    ])
    .where("r.created_at", ">=", q.from)
    .where("r.created_at", "<", q.to);
  if (q.accountId !== undefined) query = query.where("r.account_id", "=", q.accountId);
  if (q.keyId !== undefined) query = query.where("r.key_id", "=", q.keyId);
  if (q.model !== undefined) query = query.where("r.public_model", "=", q.model);
  if (q.provider !== undefined) query = query.where("r.provider", "=", q.provider);
  query = query.groupBy(group);
  query = timed
    ? query.orderBy(group)
    : // nulls first on both dialects (they disagree on where null sorts)
      query.orderBy(sql`count(*)`, "desc").orderBy(sql`coalesce(${group}, '')`);
  const rows = await query.limit(q.limit + 1).execute();
  const more = rows.length > q.limit;
  const kept = rows.slice(0, q.limit);
  const labels = await labelsOf(
    db,
    q.groupBy,
    kept.map((r) => r.grp as string | null),
  );
  const data = kept.map(
    (r): UsageRow => ({
      group:
        r.grp === null
          ? null
          : timed
            ? periodName(q.groupBy as "day" | "hour", Number(r.grp))
            : String(r.grp),
      label: r.grp === null ? null : (labels.get(String(r.grp)) ?? null),
      calls: Number(r.calls),
      errors: Number(r.errors),
      prompt_tokens: Number(r.prompt_tokens ?? 0),
      completion_tokens: Number(r.completion_tokens ?? 0),
      total_tokens: Number(r.total_tokens ?? 0),
      cost_nanos: Number(r.cost_nanos ?? 0),
      avg_latency_ms: r.avg_latency_ms === null ? null : Math.round(Number(r.avg_latency_ms)),
    }),
  );
  return { data, more };
}

/** Accounts' and keys' names, for the groups that are their ids. */
async function labelsOf(db: Db, group: UsageGroup, ids: (string | null)[]): Promise<Map<string, string>> {
  const wanted = ids.filter((id): id is string => id !== null);
  if (!wanted.length || (group !== "account" && group !== "key")) return new Map();
  if (group === "account") {
    const rows = await db.selectFrom("accounts").select(["id", "name"]).where("id", "in", wanted).execute();
    return new Map(rows.map((r) => [r.id, r.name]));
  }
  const rows = await db
    .selectFrom("api_keys")
    .select(["id", "name", "prefix"])
    .where("id", "in", wanted)
    .execute();
  return new Map(rows.map((r) => [r.id, r.name ?? r.prefix]));
}
