import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { storeSuite } from "../../test/support/postgres.ts";
import { bumpsOnce, suiteStore } from "../../test/support/suite-store.ts";
import { createAccount, findAccount } from "./accounts.ts";
import { setBudget } from "./budgets.ts";
import { createKey, findKey } from "./keys.ts";
import { readRevision } from "./revision.ts";

for (const kind of ["sqlite", "postgres"] as const) {
  describe(kind, await storeSuite(kind), () => {
    const store = suiteStore(kind);

    test("setBudget sets an account's and a key's budget and period, each bumping the revision once", async () => {
      const a = await createAccount(store.db, { name: "budgeted", plan_id: "default" });
      const { key } = await createKey(store.db, { account_id: a.id });
      assert.equal(
        await bumpsOnce(store, "account budget", () => setBudget(store.db, "accounts", a.id, 5_000, "month")),
        true,
      );
      assert.equal(
        await bumpsOnce(store, "key budget", () => setBudget(store.db, "api_keys", key.id, 70, "none")),
        true,
      );
      const account = await findAccount(store.db, a.id);
      assert.deepEqual([account.budget_nanos, account.budget_period], [5_000, "month"]);
      const k = await findKey(store.db, key.id);
      assert.deepEqual([k.budget_nanos, k.budget_period], [70, "none"]);

      await setBudget(store.db, "accounts", a.id, null, "none");
      assert.equal((await findAccount(store.db, a.id)).budget_nanos, null, "null: no budget");
    });

    test("what was spent stays: a budget set mid-month counts what the month already spent", async () => {
      const a = await createAccount(store.db, { name: "spent-before", plan_id: "default" });
      await store.db
        .updateTable("accounts")
        .set({ spent_nanos: 900, month_spent_nanos: 400, spent_month: "2026-05" })
        .where("id", "=", a.id)
        .execute();
      await setBudget(store.db, "accounts", a.id, 1_000, "month");
      const account = await findAccount(store.db, a.id);
      assert.deepEqual(
        [account.spent_nanos, account.month_spent_nanos, account.spent_month],
        [900, 400, "2026-05"],
      );
    });

    test("an unknown account or key: false, and no bump", async () => {
      const revision = await readRevision(store.db);
      assert.equal(await setBudget(store.db, "accounts", "acc_doesnotexist0", 1, "none"), false);
      assert.equal(await setBudget(store.db, "api_keys", "key_doesnotexist0", 1, "none"), false);
      assert.equal(await readRevision(store.db), revision);
    });
  });
}
