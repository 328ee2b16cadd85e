import type { Kysely } from "kysely";

// The web console: its users and sessions, support tickets, daily consumption aggregates
// (which outlive the pruned call records, for the charts), and soft-deleted keys.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("users")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id"))
    /** stored lower-cased; the login name */
    .addColumn("email", "text", (c) => c.notNull().unique())
    /** member | owner | admin */
    .addColumn("role", "text", (c) => c.notNull())
    /** scrypt$N$r$p$salt$hash (base64) */
    .addColumn("password_hash", "text", (c) => c.notNull())
    .addColumn("disabled", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("users_account").on("users").column("account_id").execute();

  await db.schema
    .createTable("sessions")
    /** SHA-256 of the cookie value, hex; the value itself is never stored */
    .addColumn("id_hash", "text", (c) => c.primaryKey())
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("last_seen_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("sessions_user").on("sessions").column("user_id").execute();

  await db.schema
    .createTable("tickets")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id"))
    /** problem | plan_upgrade | older_history | extra_export */
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("subject", "text", (c) => c.notNull())
    /** open | answered | closed */
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("description", "text", (c) => c.notNull())
    // what spec 1 asks a ticket to state: time of the problem, key, model, main parameters, error
    .addColumn("problem_at", "bigint")
    .addColumn("key_id", "text")
    .addColumn("model", "text")
    .addColumn("params", "text")
    .addColumn("error", "text")
    .addColumn("request_id", "text")
    .addColumn("created_by", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("tickets_account_updated")
    .on("tickets")
    .columns(["account_id", "updated_at"])
    .execute();
  await db.schema
    .createIndex("tickets_status_updated")
    .on("tickets")
    .columns(["status", "updated_at"])
    .execute();

  await db.schema
    .createTable("ticket_messages")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("ticket_id", "text", (c) => c.notNull().references("tickets.id"))
    .addColumn("author_id", "text", (c) => c.notNull())
    .addColumn("body", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("ticket_messages_ticket")
    .on("ticket_messages")
    .columns(["ticket_id", "created_at"])
    .execute();

  // Written in the same transaction as the call records, so the charts add up to the records
  // (and outlive them once retention prunes the records).
  await db.schema
    .createTable("daily_usage")
    .addColumn("account_id", "text", (c) => c.notNull())
    /** UTC day, YYYY-MM-DD */
    .addColumn("day", "text", (c) => c.notNull())
    /** "" for calls without a key */
    .addColumn("key_id", "text", (c) => c.notNull())
    /** the public model; "" when the call named none */
    .addColumn("model", "text", (c) => c.notNull())
    .addColumn("prompt_tokens", "bigint", (c) => c.notNull())
    .addColumn("completion_tokens", "bigint", (c) => c.notNull())
    .addColumn("total_tokens", "bigint", (c) => c.notNull())
    .addColumn("calls", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("daily_usage_pk", ["account_id", "day", "key_id", "model"])
    .execute();

  await db.schema.alterTable("api_keys").addColumn("deleted_at", "bigint").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("api_keys").dropColumn("deleted_at").execute();
  for (const table of ["daily_usage", "ticket_messages", "tickets", "sessions", "users"])
    await db.schema.dropTable(table).execute();
}
