import type { Kysely } from "kysely";

// What a call held and by how much the upstream's count passed it (issue #9): an upstream
// that counts more than the reservation is charged what it reported, and the record shows it.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("call_records")
    .addColumn("reserved_tokens", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable("call_records")
    .addColumn("overrun_tokens", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("call_records").dropColumn("overrun_tokens").execute();
  await db.schema.alterTable("call_records").dropColumn("reserved_tokens").execute();
}
