import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createTestDatabase, storeSuite, type TestDatabase } from "../../test/support/postgres.ts";
import { migrate, openStore, type Store } from "../store/db.ts";
import {
  countAccounts,
  createAccount,
  createKey,
  findAccount,
  findKey,
  findKeyByHash,
  LookupError,
  listAccounts,
  listKeys,
  readRevision,
  updateAccount,
  updateKey,
} from "./repository.ts";

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
/** node:sqlite returns rows without a prototype; compare plain copies. */
const plain = <T extends object>(row: T): T => ({ ...row });

for (const kind of ["sqlite", "postgres"] as const) {
  describe(kind, await storeSuite(kind), () => {
    let store: Store;
    let dir: string | undefined;
    let database: TestDatabase | undefined;

    before(async () => {
      if (kind === "postgres") {
        database = await createTestDatabase();
        store = openStore({ data_dir: "unused", database_url: database.url });
      } else {
        dir = mkdtempSync(join(tmpdir(), "gw-repo-test-"));
        store = openStore({ data_dir: dir });
      }
      assert.equal(store.dialect, kind);
      await migrate(store);
    });

    after(async () => {
      await store?.close();
      await database?.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    /** Runs the change and asserts it bumped the revision exactly once. */
    async function bumps<T>(what: string, change: () => Promise<T>): Promise<T> {
      const before = await readRevision(store.db);
      const result = await change();
      assert.equal(await readRevision(store.db), before + 1, `${what} bumps the revision once`);
      return result;
    }

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

    describe("keys", () => {
      let accountId: string;
      before(async () => {
        accountId = (await createAccount(store.db, { name: "key-owner", plan_id: "default" })).id;
      });

      test("create: the secret is sk- and ≥ 43 base62 characters; only its hash and prefix are stored", async () => {
        const { key, secret } = await bumps("createKey", () =>
          createKey(store.db, { account_id: accountId, name: "laptop", limit_tokens: 1000 }),
        );
        assert.match(secret, /^sk-[0-9A-Za-z]{43,}$/);
        assert.match(key.id, /^key_[0-9A-Za-z]{14}$/);
        assert.equal(key.account_id, accountId);
        assert.equal(key.name, "laptop");
        assert.equal(key.prefix, secret.slice(0, key.prefix.length));
        assert.ok(key.prefix.length < secret.length / 2, "the prefix is a short part of the secret");
        assert.equal(key.limit_tokens, 1000);
        assert.equal(key.used_tokens, 0);
        assert.equal(key.disabled, 0);
        assert.ok(!("secret_hash" in key), "the returned key does not carry the hash");

        const row = await store.db
          .selectFrom("api_keys")
          .selectAll()
          .where("id", "=", key.id)
          .executeTakeFirstOrThrow();
        assert.equal(row.secret_hash, sha256(secret));
        assert.equal(row.prefix, key.prefix);

        // The secret is nowhere in the table: not in any column of any row.
        const body = secret.slice(key.prefix.length);
        const rows = await store.db.selectFrom("api_keys").selectAll().execute();
        assert.ok(rows.length >= 1);
        for (const r of rows)
          for (const [column, value] of Object.entries(r)) {
            const text = String(value);
            assert.ok(!text.includes(secret), `api_keys.${column} holds the secret`);
            assert.ok(!text.includes(body), `api_keys.${column} holds the secret's tail`);
          }
      });

      test("keys get distinct secrets and hashes", async () => {
        const a = await createKey(store.db, { account_id: accountId });
        const b = await createKey(store.db, { account_id: accountId });
        assert.notEqual(a.secret, b.secret);
        assert.notEqual(a.key.id, b.key.id);
        assert.equal(a.key.name, null);
        assert.equal(a.key.limit_tokens, null);
      });

      test("a key for an unknown account is refused", async () => {
        await assert.rejects(createKey(store.db, { account_id: "acc_doesnotexist0" }));
      });

      test("find by id and by unique name", async () => {
        const { key } = await createKey(store.db, { account_id: accountId, name: "ci-runner" });
        assert.deepEqual(plain(await findKey(store.db, key.id)), key);
        assert.deepEqual(plain(await findKey(store.db, "ci-runner")), key);
        for (const field of ["used_tokens", "disabled", "created_at"] as const)
          assert.equal(typeof key[field], "number", field);
      });

      test("an unknown key is a LookupError", async () => {
        await assert.rejects(findKey(store.db, "no-such-key"), LookupError);
      });

      test("an ambiguous name is refused, but each key is still found by its id", async () => {
        const other = await createAccount(store.db, { name: "other-owner", plan_id: "default" });
        const a = await createKey(store.db, { account_id: accountId, name: "shared" });
        const b = await createKey(store.db, { account_id: other.id, name: "shared" });
        await assert.rejects(findKey(store.db, "shared"), (err: unknown) => {
          assert.ok(err instanceof LookupError);
          assert.match(err.message, /several/);
          return true;
        });
        assert.equal((await findKey(store.db, a.key.id)).id, a.key.id);
        assert.equal((await findKey(store.db, b.key.id)).id, b.key.id);
      });

      test("list returns an account's keys, oldest first, without secrets", async () => {
        const owner = await createAccount(store.db, { name: "lister", plan_id: "default" });
        const created = [];
        for (const name of ["k1", "k2", "k3"])
          created.push(await createKey(store.db, { account_id: owner.id, name }));
        await createKey(store.db, { account_id: accountId, name: "not-listed" });
        const listed = (await listKeys(store.db, owner.id)).map(plain);
        assert.deepEqual(
          listed.toSorted((x, y) => String(x.name).localeCompare(String(y.name))),
          created.map((c) => c.key),
        );
        for (let i = 1; i < listed.length; i++) assert.ok(listed[i - 1]!.created_at <= listed[i]!.created_at);
        for (const k of listed) assert.ok(!("secret_hash" in k));
        assert.deepEqual(await listKeys(store.db, "acc_nokeys000000"), []);
      });

      test("updateKey: disable, enable, set and clear the limit; each bumps the revision", async () => {
        const { key } = await createKey(store.db, { account_id: accountId, name: "toggled" });
        await bumps("disable", () => updateKey(store.db, key.id, { disabled: true }));
        assert.equal((await findKey(store.db, key.id)).disabled, 1);
        await bumps("enable", () => updateKey(store.db, key.id, { disabled: false }));
        assert.equal((await findKey(store.db, key.id)).disabled, 0);
        await bumps("limit", () => updateKey(store.db, key.id, { limit_tokens: 42 }));
        const limited = await findKey(store.db, key.id);
        assert.equal(limited.limit_tokens, 42);
        assert.equal(typeof limited.limit_tokens, "number");
        await bumps("no limit", () => updateKey(store.db, key.id, { limit_tokens: null }));
        assert.equal((await findKey(store.db, key.id)).limit_tokens, null);

        const revision = await readRevision(store.db);
        await updateKey(store.db, key.id, {});
        assert.equal(await readRevision(store.db), revision, "an empty update writes nothing");
      });

      test("findKeyByHash returns the key joined with its account", async () => {
        const owner = await createAccount(store.db, {
          name: "hash-owner",
          plan_id: "pro",
          quota_tokens: 777,
        });
        const { key, secret } = await createKey(store.db, {
          account_id: owner.id,
          name: "h",
          limit_tokens: 5,
        });
        const found = await findKeyByHash(store.db, sha256(secret));
        assert.ok(found);
        assert.deepEqual(plain(found.key), key);
        assert.deepEqual(plain(found.account), owner);

        await updateAccount(store.db, owner.id, { disabled: true });
        await updateKey(store.db, key.id, { disabled: true, limit_tokens: 9 });
        const again = await findKeyByHash(store.db, sha256(secret));
        assert.ok(again);
        assert.equal(again.account.disabled, 1);
        assert.equal(again.key.disabled, 1);
        assert.equal(again.key.limit_tokens, 9);
        assert.equal(typeof again.key.used_tokens, "number");
        assert.equal(typeof again.account.quota_tokens, "number");
      });

      test("findKeyByHash of an unknown hash, or of the secret itself, is null", async () => {
        const { secret } = await createKey(store.db, { account_id: accountId });
        assert.equal(await findKeyByHash(store.db, sha256(`${secret}x`)), null);
        assert.equal(await findKeyByHash(store.db, secret), null);
        assert.equal(await findKeyByHash(store.db, ""), null);
      });
    });

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
