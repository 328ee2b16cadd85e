import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { storeSuite } from "../../test/support/postgres.ts";
import { bumpsOnce, suiteStore } from "../../test/support/suite-store.ts";
import { countAccounts, createAccount, findAccount, listAccounts, updateAccount } from "./accounts.ts";
import { LookupError } from "./errors.ts";
import { readRevision } from "./revision.ts";

/** node:sqlite returns rows without a prototype; compare plain copies. */
const plain = <T extends object>(row: T): T => ({ ...row });

for (const kind of ["sqlite", "postgres"] as const) {
  describe(kind, await storeSuite(kind), () => {
    const store = suiteStore(kind);
    const bumps = <T>(what: string, change: () => Promise<T>) => bumpsOnce(store, what, change);

    describe("accounts", () => {
      test("create, then find by id and by name", async () => {
        const created = await bumps("createAccount", () =>
          createAccount(store.db, { name: "alice", plan_id: "default" }),
        );
        assert.match(created.id, /^acc_[0-9A-Za-z]{14}$/);
        assert.equal(created.name, "alice");
        assert.equal(created.plan_id, "default");
        assert.equal(created.quota_tokens, null);
        assert.equal(created.used_tokens, 0);
        assert.equal(created.disabled, 0);
        assert.ok(Math.abs(created.created_at - Date.now()) < 60_000);

        const byId = await findAccount(store.db, created.id);
        assert.deepEqual(plain(byId), created);
        const byName = await findAccount(store.db, "alice");
        assert.deepEqual(plain(byName), created);
        // numbers come back as numbers on both dialects (bigint columns included)
        for (const field of ["used_tokens", "disabled", "created_at"] as const)
          assert.equal(typeof byId[field], "number", field);
      });

      test("create with an own quota", async () => {
        const a = await createAccount(store.db, {
          name: "quota-owner",
          plan_id: "pro",
          quota_tokens: 12_345,
        });
        const found = await findAccount(store.db, a.id);
        assert.equal(found.quota_tokens, 12_345);
        assert.equal(typeof found.quota_tokens, "number");
        assert.equal(found.plan_id, "pro");
      });

      test("an unknown id or name is a LookupError", async () => {
        await assert.rejects(findAccount(store.db, "nobody"), (err: unknown) => {
          assert.ok(err instanceof LookupError);
          assert.match(err.message, /nobody/);
          return true;
        });
      });

      test("a duplicate name is refused with a LookupError and changes nothing", async () => {
        await createAccount(store.db, { name: "dup", plan_id: "default" });
        const count = await countAccounts(store.db);
        const revision = await readRevision(store.db);
        await assert.rejects(createAccount(store.db, { name: "dup", plan_id: "other" }), (err: unknown) => {
          assert.ok(err instanceof LookupError, String(err));
          assert.match(err.message, /dup/);
          return true;
        });
        assert.equal(await countAccounts(store.db), count);
        assert.equal(await readRevision(store.db), revision, "a refused create does not bump");
        assert.equal((await findAccount(store.db, "dup")).plan_id, "default");
      });

      test("concurrent creates of one name: exactly one succeeds, the others get a LookupError", async () => {
        // several names raced at once, so the creates really interleave on a pooled database
        const names = Array.from({ length: 5 }, (_, i) => `racer-${i}`);
        const results = await Promise.allSettled(
          names.flatMap((name) =>
            Array.from({ length: 10 }, () => createAccount(store.db, { name, plan_id: "default" })),
          ),
        );
        const ok = results.filter((r) => r.status === "fulfilled");
        const refused = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
        assert.equal(ok.length, names.length);
        for (const r of refused)
          assert.ok(r.reason instanceof LookupError, `expected a LookupError, got: ${String(r.reason)}`);
        const all = await listAccounts(store.db);
        for (const name of names) assert.equal(all.filter((a) => a.name === name).length, 1);
      });

      test("list returns every account, oldest first", async () => {
        const names = ["list-1", "list-2", "list-3"];
        const created = [];
        for (const name of names) created.push(await createAccount(store.db, { name, plan_id: "default" }));
        const all = await listAccounts(store.db);
        assert.equal(all.length, await countAccounts(store.db));
        const listed = all.filter((a) => names.includes(a.name)).map(plain);
        assert.deepEqual(
          listed.toSorted((x, y) => x.name.localeCompare(y.name)),
          created,
        );
        for (let i = 1; i < all.length; i++) assert.ok(all[i - 1]!.created_at <= all[i]!.created_at);
      });

      test("update plan, quota and disabled; each update bumps the revision", async () => {
        const a = await createAccount(store.db, { name: "bob", plan_id: "default" });
        await bumps("updateAccount plan", () => updateAccount(store.db, a.id, { plan_id: "pro" }));
        assert.equal((await findAccount(store.db, a.id)).plan_id, "pro");

        await bumps("updateAccount quota", () => updateAccount(store.db, a.id, { quota_tokens: 500 }));
        assert.equal((await findAccount(store.db, a.id)).quota_tokens, 500);

        await bumps("updateAccount disable", () => updateAccount(store.db, a.id, { disabled: true }));
        assert.equal((await findAccount(store.db, a.id)).disabled, 1);

        await bumps("updateAccount several", () =>
          updateAccount(store.db, a.id, { disabled: false, quota_tokens: null, plan_id: "default" }),
        );
        const after = await findAccount(store.db, a.id);
        assert.equal(after.disabled, 0);
        assert.equal(after.quota_tokens, null);
        assert.equal(after.plan_id, "default");
        assert.equal(after.name, "bob");
        assert.equal(after.used_tokens, 0);
      });

      test("an update with no changes writes nothing", async () => {
        const a = await createAccount(store.db, { name: "unchanged", plan_id: "default" });
        const revision = await readRevision(store.db);
        await updateAccount(store.db, a.id, {});
        assert.equal(await readRevision(store.db), revision);
        assert.deepEqual(plain(await findAccount(store.db, a.id)), a);
      });

      test("updating one account leaves the others alone", async () => {
        const a = await createAccount(store.db, { name: "left", plan_id: "default" });
        const b = await createAccount(store.db, { name: "right", plan_id: "default" });
        await updateAccount(store.db, a.id, { disabled: true, plan_id: "pro" });
        assert.deepEqual(plain(await findAccount(store.db, b.id)), b);
      });
    });
  });
}
