import type { Kysely } from "kysely";

// Tokens the upstream counted for a call that nobody was charged for: the gateway's own
// failures (a reviewer or the store unavailable). They are the operator's cost, kept visible
// beside the charged figures, which alone add up to the counters.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("call_records")
    .addColumn("uncharged_tokens", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("call_records").dropColumn("uncharged_tokens").execute();
}
