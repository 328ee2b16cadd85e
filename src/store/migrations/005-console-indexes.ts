import { type Kysely, sql } from "kysely";

// Indexes for the console's record views and for retention (src/records/queries.ts,
// src/retention/retention.ts). Both are partial, so each holds only the rows its queries read.
export async function up(db: Kysely<any>): Promise<void> {
  // Consumption records (total_tokens > 0) of an account, newest first, with the tie-breaker:
  // the Last-year view, its 1000-record boundary, the export, and retention's per-account
  // pruning all read ranges of it; the boundary and pruning never touch the table itself.
  await db.schema
    .createIndex("call_records_consumption")
    .on("call_records")
    .columns(["account_id", "created_at", "request_id"])
    .where(sql.ref("total_tokens"), ">", 0)
    .execute();
  // Calls that consumed nothing (refused, failed, the client left early), by time: retention
  // deletes those of past days. Without it each run would scan the whole table.
  await db.schema
    .createIndex("call_records_no_consumption")
    .on("call_records")
    .column("created_at")
    .where(sql.ref("total_tokens"), "=", 0)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex("call_records_no_consumption").execute();
  await db.schema.dropIndex("call_records_consumption").execute();
}
