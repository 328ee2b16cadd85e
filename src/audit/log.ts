// The audit log: every change made through the admin API or the console's operator pages
// (issue #30), who made it, when, and the resource before and after. Written in the change's
// own transaction, so a change is never without its entry. Secrets never reach it: callers
// pass views with their secrets masked (src/catalog/mask.ts for the catalog's).
import { randomUUID } from "node:crypto";
import type { Kysely, Transaction } from "kysely";
import type { Database } from "../store/schema.ts";

export interface AuditEntry {
  /** "token:<id>", "user:<e-mail>" or "cli" */
  actor: string;
  action: string;
  /** the admin API's resource name: providers, models, plans, accounts, keys, users, admin-tokens, … */
  resource: string;
  resourceId: string | null;
  before?: unknown;
  after?: unknown;
}

export interface AuditRow {
  id: string;
  created_at: number;
  actor: string;
  action: string;
  resource: string;
  resource_id: string | null;
  before: unknown;
  after: unknown;
}

export async function writeAudit(
  db: Kysely<Database> | Transaction<Database>,
  entry: AuditEntry,
  now = Date.now(),
): Promise<void> {
  await db
    .insertInto("audit_log")
    .values({
      id: randomUUID(),
      created_at: now,
      actor: entry.actor,
      action: entry.action,
      resource: entry.resource,
      resource_id: entry.resourceId,
      before: entry.before === undefined ? null : JSON.stringify(entry.before),
      after: entry.after === undefined ? null : JSON.stringify(entry.after),
    })
    .execute();
}

export interface AuditQuery {
  resource?: string | undefined;
  resourceId?: string | undefined;
  actor?: string | undefined;
  /** Unix ms, inclusive */
  from?: number | undefined;
  /** Unix ms, exclusive */
  to?: number | undefined;
  limit: number;
  /** entries older than this one (its created_at and id), for the next page */
  before?: { createdAt: number; id: string } | undefined;
}

/** Newest first. */
export async function listAudit(db: Kysely<Database>, q: AuditQuery): Promise<AuditRow[]> {
  let query = db.selectFrom("audit_log").selectAll();
  if (q.resource) query = query.where("resource", "=", q.resource);
  if (q.resourceId) query = query.where("resource_id", "=", q.resourceId);
  if (q.actor) query = query.where("actor", "=", q.actor);
  if (q.from !== undefined) query = query.where("created_at", ">=", q.from);
  if (q.to !== undefined) query = query.where("created_at", "<", q.to);
  if (q.before) {
    const { createdAt, id } = q.before;
    query = query.where((eb) =>
      eb.or([
        eb("created_at", "<", createdAt),
        eb.and([eb("created_at", "=", createdAt), eb("id", "<", id)]),
      ]),
    );
  }
  const rows = await query.orderBy("created_at", "desc").orderBy("id", "desc").limit(q.limit).execute();
  return rows.map((r) => ({
    ...r,
    created_at: Number(r.created_at),
    before: r.before === null ? null : JSON.parse(r.before),
    after: r.after === null ? null : JSON.parse(r.after),
  }));
}
