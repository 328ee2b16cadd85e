import type { Kysely } from "kysely";

// The control plane (issue #30): the catalog (providers, models, plans) in the store, the
// admin API's tokens, and the audit log of every change made through it or the console.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("catalog_entries")
    /** providers | models | plans */
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("id", "text", (c) => c.notNull())
    /** the entry's place in its list, as the file had it (the order GET /v1/models keeps) */
    .addColumn("position", "double precision", (c) => c.notNull())
    /** the entry as the file or the API wrote it, without its secrets: JSON */
    .addColumn("body", "text", (c) => c.notNull())
    /** a provider's secrets (upstream keys, header values), encrypted: src/catalog/secret-box.ts */
    .addColumn("secrets", "text")
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("catalog_entries_pk", ["kind", "id"])
    .execute();
  await db.schema
    .createTable("admin_tokens")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("name", "text", (c) => c.notNull())
    /** what lists show: the token's prefix and its first characters */
    .addColumn("prefix", "text", (c) => c.notNull())
    /** SHA-256 of the whole token, hex */
    .addColumn("secret_hash", "text", (c) => c.notNull().unique())
    /** JSON array of scopes: read, keys, catalog, full */
    .addColumn("scopes", "text", (c) => c.notNull())
    /** who made it: "cli", or the console user's e-mail, or another token's "token:<id>" */
    .addColumn("created_by", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("last_used_at", "bigint")
    .addColumn("revoked_at", "bigint")
    .execute();
  await db.schema
    .createTable("audit_log")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    /** "token:<id>", "user:<e-mail>" or "cli" */
    .addColumn("actor", "text", (c) => c.notNull())
    /** create | update | delete | revoke | seed | … */
    .addColumn("action", "text", (c) => c.notNull())
    /** the admin API's resource name: providers, models, plans, accounts, keys, … */
    .addColumn("resource", "text", (c) => c.notNull())
    .addColumn("resource_id", "text")
    /** JSON of the resource before and after, secrets masked; null: none (created, deleted) */
    .addColumn("before", "text")
    .addColumn("after", "text")
    .execute();
  await db.schema.createIndex("audit_log_created").on("audit_log").column("created_at").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ["audit_log", "admin_tokens", "catalog_entries"]) await db.schema.dropTable(t).execute();
}
