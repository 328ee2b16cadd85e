import type { Kysely } from "kysely";

// The breakdown of a call's usage that providers report and bill differently: prompt tokens
// read from the provider's cache (discounted), written to it (Anthropic bills writes above
// base input) and reasoning tokens (of the completion). Each is part of prompt_tokens or
// completion_tokens already; these columns only say how much.
export async function up(db: Kysely<any>): Promise<void> {
  for (const column of ["cached_tokens", "cache_write_tokens", "reasoning_tokens"])
    await db.schema
      .alterTable("call_records")
      .addColumn(column, "integer", (c) => c.notNull().defaultTo(0))
      .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ["cached_tokens", "cache_write_tokens", "reasoning_tokens"])
    await db.schema.alterTable("call_records").dropColumn(column).execute();
}
