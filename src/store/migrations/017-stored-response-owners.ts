import type { Kysely } from "kysely";

// Stored responses (second audit, items 3 and 10): the key that made each one, so a response
// can be visible to that key alone, and its size, so what an account keeps can be bounded
// without reading the rows. Rows from before have no key (visible to the account's keys, as
// they were) and the size of their texts.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("stored_responses").addColumn("key_id", "text").execute();
  await db.schema
    .alterTable("stored_responses")
    .addColumn("bytes", "bigint", (c) => c.notNull().defaultTo(0))
    .execute();
  await db
    .updateTable("stored_responses")
    .set((eb) => ({ bytes: eb(eb.fn("length", ["input"]), "+", eb.fn("length", ["response"])) }))
    .execute();
  // what an account keeps is summed by account
  await db.schema
    .createIndex("stored_responses_account")
    .on("stored_responses")
    .columns(["account_id", "created_at"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex("stored_responses_account").execute();
  await db.schema.alterTable("stored_responses").dropColumn("bytes").execute();
  await db.schema.alterTable("stored_responses").dropColumn("key_id").execute();
}
