import type { Kysely } from "kysely";

// The console's login throttle (src/auth/login-limiter.ts), in the store so every instance
// counts every attempt (second outside audit, item 4): one row per counter, keyed by the
// SHA-256 of what it counts (an e-mail and a client address, an address, an e-mail), so the
// table holds neither e-mails nor addresses.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("login_throttle")
    .addColumn("key", "text", (c) => c.primaryKey())
    /** failures not yet forgotten as of last_at (one is forgotten every 15 minutes) */
    .addColumn("level", "double precision", (c) => c.notNull())
    /** the last counted failure: the backoff runs from it */
    .addColumn("last_at", "bigint", (c) => c.notNull())
    /** e-mail and address rows: a login from that address succeeded, trusted until then */
    .addColumn("trusted_until", "bigint")
    .execute();
  await db.schema.createIndex("login_throttle_last_at").on("login_throttle").column("last_at").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("login_throttle").execute();
}
