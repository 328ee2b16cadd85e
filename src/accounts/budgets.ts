// Money budgets of accounts and keys: what the operator sets. What is spent against them is
// added by the record writer (src/records/), with each call's record.
import type { Kysely } from "kysely";
import type { BudgetPeriod } from "../prices/period.ts";
import type { Database } from "../store/schema.ts";
import { bumpRevision } from "./revision.ts";

type Db = Kysely<Database>;

/**
 * Sets an account's or a key's money budget (nanodollars; null: none) and its period. What
 * was spent stays: a budget set mid-month counts what the month already spent.
 */
export async function setBudget(
  db: Db,
  table: "accounts" | "api_keys",
  id: string,
  nanos: number | null,
  period: BudgetPeriod,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const r = await trx
      .updateTable(table)
      .set({ budget_nanos: nanos, budget_period: period })
      .where("id", "=", id)
      .executeTakeFirst();
    if (!r.numUpdatedRows) return false;
    await bumpRevision(trx);
    return true;
  });
}
