import type { Kysely } from "kysely";

// Which client API each call came in (issue #19): chat.completions, messages (Anthropic's
// Messages API) or responses (OpenAI's Responses API). Earlier records were all chat
// completions.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("call_records")
    .addColumn("api", "text", (c) => c.notNull().defaultTo("chat.completions"))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("call_records").dropColumn("api").execute();
}
