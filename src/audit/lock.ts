// What an audit entry's "before" needs: the row as the change found it, not as a change
// committed between reading and writing it left it.
import { sql, type Transaction } from "kysely";
import type { Database } from "../store/schema.ts";

/**
 * Locks a row for the rest of the transaction with a write that changes nothing: PostgreSQL
 * holds the row until commit, and SQLite takes its write lock now (a transaction that reads
 * first and writes later can fail to upgrade when another process wrote meanwhile). False
 * when there is no such row.
 */
export async function lockRow(
  trx: Transaction<Database>,
  table: "accounts" | "api_keys" | "users" | "tickets" | "admin_tokens",
  id: string,
): Promise<boolean> {
  const r = await sql`update ${sql.table(table)} set id = id where id = ${id}`.execute(trx);
  return Number(r.numAffectedRows ?? 0) > 0;
}
