import { type Kysely, sql } from "kysely";

// Written with Kysely's schema builder so the one migration serves SQLite and PostgreSQL.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("accounts")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("name", "text", (c) => c.notNull().unique())
    .addColumn("plan_id", "text", (c) => c.notNull())
    .addColumn("quota_tokens", "bigint")
    .addColumn("used_tokens", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("disabled", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("api_keys")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id"))
    .addColumn("name", "text")
    .addColumn("prefix", "text", (c) => c.notNull())
    .addColumn("secret_hash", "text", (c) => c.notNull().unique())
    .addColumn("limit_tokens", "bigint")
    .addColumn("used_tokens", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("disabled", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("api_keys_account")
    .on("api_keys")
    .columns(["account_id", "created_at"])
    .execute();

  await db.schema
    .createTable("call_records")
    .addColumn("request_id", "text", (c) => c.primaryKey())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("account_id", "text")
    .addColumn("key_id", "text")
    .addColumn("public_model", "text")
    .addColumn("upstream_model", "text")
    .addColumn("provider", "text")
    .addColumn("params", "text")
    .addColumn("stream", "integer", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("http_status", "integer", (c) => c.notNull())
    .addColumn("error_code", "text")
    .addColumn("prompt_tokens", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("completion_tokens", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("total_tokens", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("usage_source", "text", (c) => c.notNull())
    .addColumn("latency_ms", "integer", (c) => c.notNull())
    .addColumn("ttft_ms", "integer")
    .execute();
  // The console reads an account's or a key's records newest first.
  await db.schema
    .createIndex("call_records_account_time")
    .on("call_records")
    .columns(["account_id", "created_at"])
    .execute();
  await db.schema
    .createIndex("call_records_key_time")
    .on("call_records")
    .columns(["key_id", "created_at"])
    .execute();

  await db.schema
    .createTable("models_seen")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();

  // One row whose value every change of accounts or keys bumps; running gateways poll it
  // to drop their caches (a key disabled by the CLI is refused within a second).
  await db.schema
    .createTable("revision")
    .addColumn("id", "integer", (c) => c.primaryKey())
    .addColumn("value", "bigint", (c) => c.notNull())
    .execute();
  await sql`insert into revision (id, value) values (1, 0)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ["revision", "models_seen", "call_records", "api_keys", "accounts"])
    await db.schema.dropTable(t).execute();
}
