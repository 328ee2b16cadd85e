import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { storeSuite } from "../../test/support/postgres.ts";
import { suiteStore } from "../../test/support/suite-store.ts";
import { createAccount, findAccount, listAccounts, updateAccount } from "./accounts.ts";
import { createKey, findKey, listKeys, updateKey } from "./keys.ts";
import { readRevision } from "./revision.ts";

for (const kind of ["sqlite", "postgres"] as const) {
  describe(kind, await storeSuite(kind), () => {
    const store = suiteStore(kind);

    test("the revision only grows, by one per change", async () => {
      const start = await readRevision(store.db);
      const a = await createAccount(store.db, { name: "rev", plan_id: "default" });
      const { key } = await createKey(store.db, { account_id: a.id });
      await updateAccount(store.db, a.id, { quota_tokens: 1 });
      await updateKey(store.db, key.id, { disabled: true });
      assert.equal(await readRevision(store.db), start + 4);
      // reads do not bump
      await findAccount(store.db, a.id);
      await listAccounts(store.db);
      await findKey(store.db, key.id);
      await listKeys(store.db, a.id);
      assert.equal(await readRevision(store.db), start + 4);
    });
  });
}
