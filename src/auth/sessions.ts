// Console sessions. The cookie carries 32 random bytes; the store keeps only their SHA-256,
// so a copy of the database opens no session. A session ends 12 hours after its last use or
// 7 days after login, whichever comes first, and at logout.
import { createHash, randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import type { Role } from "../accounts/roles.ts";
import type { User } from "../accounts/users.ts";
import type { Database } from "../store/schema.ts";

type Db = Kysely<Database>;

export const SESSION_COOKIE = "gw_session";
export const SESSION_IDLE_MS = 12 * 3_600_000;
export const SESSION_ABSOLUTE_MS = 7 * 24 * 3_600_000;
/** last_seen_at is written at most this often: a busy console page is not a write per call */
const TOUCH_EVERY_MS = 60_000;
/** expired rows are deleted at most this often per process, on a login */
const PURGE_EVERY_MS = 10 * 60_000;

const TOKEN_BYTES = 32;
/** base64url of 32 bytes */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

let lastPurge = 0;

function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** Starts a session for the user; returns the cookie value, which is never stored. */
export async function createSession(
  db: Db,
  userId: string,
  now = Date.now(),
): Promise<{ token: string; expires_at: number }> {
  if (now - lastPurge >= PURGE_EVERY_MS) {
    lastPurge = now;
    await purgeExpiredSessions(db, now);
  }
  const token = randomBytes(TOKEN_BYTES).toString("base64url");
  // idle expiry first; each use moves it, never past created_at + SESSION_ABSOLUTE_MS
  const expires_at = now + SESSION_IDLE_MS;
  await db
    .insertInto("sessions")
    .values({ id_hash: hashToken(token), user_id: userId, created_at: now, last_seen_at: now, expires_at })
    .execute();
  return { token, expires_at };
}

/**
 * The live session's user, or null: unknown cookie, expired session, disabled user. A use
 * more than a minute after the last recorded one moves the idle expiry forward.
 */
export async function resolveSession(db: Db, token: string, now = Date.now()): Promise<User | null> {
  if (!TOKEN_SHAPE.test(token)) return null;
  const idHash = hashToken(token);
  const row = await db
    .selectFrom("sessions as s")
    .innerJoin("users as u", "u.id", "s.user_id")
    .select([
      "s.created_at as s_created",
      "s.last_seen_at",
      "s.expires_at",
      "u.id",
      "u.account_id",
      "u.email",
      "u.role",
      "u.disabled",
      "u.created_at",
    ])
    .where("s.id_hash", "=", idHash)
    .executeTakeFirst();
  if (!row || row.expires_at <= now || row.disabled) return null;
  if (now - row.last_seen_at >= TOUCH_EVERY_MS)
    await db
      .updateTable("sessions")
      .set({
        last_seen_at: now,
        expires_at: Math.min(row.s_created + SESSION_ABSOLUTE_MS, now + SESSION_IDLE_MS),
      })
      .where("id_hash", "=", idHash)
      .execute();
  return {
    id: row.id,
    account_id: row.account_id,
    email: row.email,
    role: row.role as Role,
    disabled: row.disabled,
    created_at: row.created_at,
  };
}

/** Ends the session of this cookie value, if there is one. */
export async function deleteSession(db: Db, token: string): Promise<void> {
  if (!TOKEN_SHAPE.test(token)) return;
  await db.deleteFrom("sessions").where("id_hash", "=", hashToken(token)).execute();
}

/** Deletes every expired session; returns how many. */
export async function purgeExpiredSessions(db: Db, now = Date.now()): Promise<number> {
  const r = await db.deleteFrom("sessions").where("expires_at", "<=", now).executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** The value of one cookie in a Cookie header, or undefined. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * The Set-Cookie value for a session (or, with value null, one that clears it). `Secure` only
 * when the request came over TLS on the gateway's own socket: a forwarded-proto header is not
 * trusted, and a Secure cookie set over plain HTTP would never be sent back.
 */
export function sessionCookie(value: string | null, secure: boolean): string {
  const parts = [
    `${SESSION_COOKIE}=${value ?? ""}`,
    "Path=/",
    "HttpOnly",
    "SameSite=Strict",
    `Max-Age=${value === null ? 0 : Math.floor(SESSION_ABSOLUTE_MS / 1000)}`,
  ];
  if (secure) parts.push("Secure");
  return parts.join("; ");
}
