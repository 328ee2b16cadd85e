import type { Kysely } from "kysely";

// What content safety decided about each call (null when safety was off for it).
export async function up(db: Kysely<any>): Promise<void> {
  for (const [column, type] of [
    ["safety_mode", "text"],
    ["safety_verdict", "text"],
    ["safety_categories", "text"],
    ["safety_ms", "integer"],
  ] as const)
    await db.schema.alterTable("call_records").addColumn(column, type).execute();
  // Safety per account: null inherits the plan's (and then the global) setting.
  await db.schema.alterTable("accounts").addColumn("safety", "text").execute();
  await db.schema.alterTable("accounts").addColumn("safety_streaming", "text").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("accounts").dropColumn("safety_streaming").execute();
  await db.schema.alterTable("accounts").dropColumn("safety").execute();
  for (const column of ["safety_ms", "safety_categories", "safety_verdict", "safety_mode"])
    await db.schema.alterTable("call_records").dropColumn(column).execute();
}
