// Admin tokens: what authenticates the admin API (/admin/v1). A token is "gwadmin-" and 32
// random bytes in base64url, shown once when made; the store keeps its SHA-256 and a short
// prefix for lists. Tokens are looked up in the store on every admin call (admin calls are
// few), so a revoked token stops on every instance at once, with no cache to drop.
import { createHash, randomBytes } from "node:crypto";
import type { Kysely, Transaction } from "kysely";
import { lockRow } from "../audit/lock.ts";
import { writeAudit } from "../audit/log.ts";
import type { Database } from "../store/schema.ts";
import { ADMIN_SCOPES, type AdminScope } from "./admin-scopes.ts";
import { newId } from "./key-format.ts";

export { ADMIN_SCOPES, type AdminScope };

type Db = Kysely<Database>;

export const ADMIN_TOKEN_PREFIX = "gwadmin-";
const SECRET_BYTES = 32;
/** characters of the secret kept for display, after the prefix */
const PREFIX_CHARS = 6;
/** base64url of 32 bytes */
const TOKEN_SHAPE = /^gwadmin-[A-Za-z0-9_-]{43}$/;
/** last_used_at is written at most this often per token: a busy script is not a write per call */
const TOUCH_EVERY_MS = 60_000;

export interface AdminToken {
  id: string;
  name: string;
  /** "gwadmin-" and the first characters of the secret */
  prefix: string;
  scopes: AdminScope[];
  /** "cli", "user:<e-mail>" or "token:<id>" */
  created_by: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** Whether the scopes allow what `need` names: `full` everything; `keys` and `catalog` also read. */
export function scopeAllows(scopes: readonly AdminScope[], need: AdminScope): boolean {
  if (scopes.includes("full")) return true;
  if (need === "read") return scopes.length > 0;
  return scopes.includes(need);
}

/** Cheap shape check before hashing: anything else is no admin token, without a store lookup. */
export function looksLikeAdminToken(token: string): boolean {
  return TOKEN_SHAPE.test(token);
}

function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

const tokenColumns = [
  "id",
  "name",
  "prefix",
  "scopes",
  "created_by",
  "created_at",
  "last_used_at",
  "revoked_at",
] as const;

function asToken(row: {
  id: string;
  name: string;
  prefix: string;
  scopes: string;
  created_by: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}): AdminToken {
  const scopes = JSON.parse(row.scopes) as unknown;
  return {
    ...row,
    scopes: Array.isArray(scopes)
      ? scopes.filter((s): s is AdminScope => (ADMIN_SCOPES as readonly unknown[]).includes(s))
      : [],
    created_at: Number(row.created_at),
    last_used_at: row.last_used_at === null ? null : Number(row.last_used_at),
    revoked_at: row.revoked_at === null ? null : Number(row.revoked_at),
  };
}

/** A token as the audit log records it: never the token or its hash. */
function tokenAudit(t: AdminToken) {
  return { id: t.id, name: t.name, prefix: t.prefix, scopes: t.scopes, revoked: t.revoked_at !== null };
}

async function tokenById(db: Db | Transaction<Database>, id: string): Promise<AdminToken | undefined> {
  const row = await db
    .selectFrom("admin_tokens")
    .select(tokenColumns)
    .where("id", "=", id)
    .executeTakeFirst();
  return row && asToken(row);
}

/** Makes a token; `secret` is the token itself, returned this once and never stored. */
export async function createAdminToken(
  db: Db,
  input: { name: string; scopes: readonly AdminScope[] },
  actor: string,
): Promise<{ token: AdminToken; secret: string }> {
  const secret = `${ADMIN_TOKEN_PREFIX}${randomBytes(SECRET_BYTES).toString("base64url")}`;
  const token: AdminToken = {
    id: newId("adm"),
    name: input.name,
    prefix: secret.slice(0, ADMIN_TOKEN_PREFIX.length + PREFIX_CHARS),
    // in the order of ADMIN_SCOPES, each once
    scopes: ADMIN_SCOPES.filter((s) => input.scopes.includes(s)),
    created_by: actor,
    created_at: Date.now(),
    last_used_at: null,
    revoked_at: null,
  };
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto("admin_tokens")
      .values({ ...token, scopes: JSON.stringify(token.scopes), secret_hash: hashToken(secret) })
      .execute();
    await writeAudit(trx, {
      actor,
      action: "create",
      resource: "admin-tokens",
      resourceId: token.id,
      after: tokenAudit(token),
    });
  });
  return { token, secret };
}

/** Every token, revoked ones too, newest first. */
export async function listAdminTokens(db: Db): Promise<AdminToken[]> {
  const rows = await db
    .selectFrom("admin_tokens")
    .select(tokenColumns)
    .orderBy("created_at", "desc")
    .orderBy("id", "desc")
    .execute();
  return rows.map(asToken);
}

export async function findAdminToken(db: Db, id: string): Promise<AdminToken | undefined> {
  return tokenById(db, id);
}

/**
 * Revokes a token: the next admin call with it, on any instance, is refused. Revoking a
 * revoked token changes nothing (and writes no entry). Undefined when there is no such token.
 */
export async function revokeAdminToken(db: Db, id: string, actor: string): Promise<AdminToken | undefined> {
  return db.transaction().execute(async (trx) => {
    if (!(await lockRow(trx, "admin_tokens", id))) return undefined;
    const before = (await tokenById(trx, id))!;
    if (before.revoked_at !== null) return before;
    await trx.updateTable("admin_tokens").set({ revoked_at: Date.now() }).where("id", "=", id).execute();
    const after = (await tokenById(trx, id))!;
    await writeAudit(trx, {
      actor,
      action: "revoke",
      resource: "admin-tokens",
      resourceId: id,
      before: tokenAudit(before),
      after: tokenAudit(after),
    });
    return after;
  });
}

/**
 * The live token this secret is, or null (unknown, revoked, not a token's shape). A use more
 * than a minute after the last recorded one is recorded.
 */
export async function resolveAdminToken(
  db: Db,
  secret: string,
  now = Date.now(),
): Promise<AdminToken | null> {
  if (!looksLikeAdminToken(secret)) return null;
  const row = await db
    .selectFrom("admin_tokens")
    .select(tokenColumns)
    .where("secret_hash", "=", hashToken(secret))
    .executeTakeFirst();
  if (!row || row.revoked_at !== null) return null;
  const token = asToken(row);
  if (token.last_used_at === null || now - token.last_used_at >= TOUCH_EVERY_MS) {
    // the condition again in the write: instances that read the same old time write it once
    await db
      .updateTable("admin_tokens")
      .set({ last_used_at: now })
      .where("id", "=", token.id)
      .where((eb) => eb.or([eb("last_used_at", "is", null), eb("last_used_at", "<=", now - TOUCH_EVERY_MS)]))
      .execute();
    token.last_used_at = now;
  }
  return token;
}
