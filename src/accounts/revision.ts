// The revision counter. Every change to accounts and keys that a running gateway caches bumps
// it in the same transaction as the change, so every instance, polling it
// (src/accounts/revision-watcher.ts), drops its caches within a poll.
import type { Kysely, Transaction } from "kysely";
import type { Database } from "../store/schema.ts";

/** In the change's own transaction: a change committed without its bump would stay cached. */
export async function bumpRevision(trx: Transaction<Database>): Promise<void> {
  await trx
    .updateTable("revision")
    .set((eb) => ({ value: eb("value", "+", 1) }))
    .where("id", "=", 1)
    .execute();
}

export async function readRevision(db: Kysely<Database>): Promise<number> {
  const row = await db.selectFrom("revision").select("value").where("id", "=", 1).executeTakeFirst();
  return row ? Number(row.value) : 0;
}
