import type { Kysely } from "kysely";

// A key's own list of the public models it may call (the admin API, issue #30): a JSON array
// of model ids; null: every model of its account's plan. Also an index on the records' time
// across accounts: the admin API reads records and their aggregates by date range for every
// account at once, which the per-account and per-key indexes cannot serve. Times only grow,
// so new rows land at the index's end and it costs a record's insert little.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("api_keys").addColumn("allowed_models", "text").execute();
  await db.schema
    .createIndex("call_records_time")
    .on("call_records")
    .columns(["created_at", "request_id"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex("call_records_time").execute();
  await db.schema.alterTable("api_keys").dropColumn("allowed_models").execute();
}
