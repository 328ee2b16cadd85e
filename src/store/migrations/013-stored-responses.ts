import type { Kysely } from "kysely";

// Responses of the Responses API kept for their account (issue #19): what GET
// /v1/responses/{id} answers and what a previous_response_id continues. Each row holds its own
// request's input and the Response object; a conversation is the chain of previous ids.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("stored_responses")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id"))
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("previous_response_id", "text")
    /** JSON: this request's input items (a string input as one user message) */
    .addColumn("input", "text", (c) => c.notNull())
    /** JSON: the Response object as the client received it */
    .addColumn("response", "text", (c) => c.notNull())
    .execute();
  // retention deletes by age
  await db.schema
    .createIndex("stored_responses_created")
    .on("stored_responses")
    .column("created_at")
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("stored_responses").execute();
}
