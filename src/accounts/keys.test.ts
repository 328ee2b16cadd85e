import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { before, describe, test } from "node:test";
import { storeSuite } from "../../test/support/postgres.ts";
import { bumpsOnce, suiteStore } from "../../test/support/suite-store.ts";
import { createAccount, updateAccount } from "./accounts.ts";
import { LookupError } from "./errors.ts";
import { createKey, deleteKey, findKey, findKeyByHash, listEveryKey, listKeys, updateKey } from "./keys.ts";
import { readRevision } from "./revision.ts";

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
/** node:sqlite returns rows without a prototype; compare plain copies. */
const plain = <T extends object>(row: T): T => ({ ...row });

for (const kind of ["sqlite", "postgres"] as const) {
  describe(kind, await storeSuite(kind), () => {
    const store = suiteStore(kind);
    const bumps = <T>(what: string, change: () => Promise<T>) => bumpsOnce(store, what, change);

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

      test("deleteKey: the key stops authenticating and leaves the lists; its row stays, disabled", async () => {
        const { key, secret } = await createKey(store.db, { account_id: accountId, name: "retired" });
        assert.equal(await bumps("deleteKey", () => deleteKey(store.db, key.id)), true);
        assert.equal(await findKeyByHash(store.db, sha256(secret)), null);
        assert.ok(!(await listKeys(store.db, accountId)).some((k) => k.id === key.id));
        assert.deepEqual(await listEveryKey(store.db, { keyId: key.id }), []);
        // its records and consumption keep their key
        assert.equal((await findKey(store.db, key.id)).disabled, 1);

        const revision = await readRevision(store.db);
        assert.equal(await deleteKey(store.db, key.id), false, "deleted already");
        assert.equal(await deleteKey(store.db, "key_doesnotexist0"), false);
        assert.equal(await readRevision(store.db), revision, "a delete that deletes nothing does not bump");
      });

      test("listEveryKey: live keys with their account's name, by account name, filtered by account or key", async () => {
        const zed = await createAccount(store.db, { name: "zed-every", plan_id: "default" });
        const abe = await createAccount(store.db, { name: "abe-every", plan_id: "default" });
        const z1 = (await createKey(store.db, { account_id: zed.id, name: "z1" })).key;
        const a1 = (await createKey(store.db, { account_id: abe.id, name: "a1" })).key;
        const a2 = (await createKey(store.db, { account_id: abe.id, name: "a2" })).key;
        // by account name, then by creation (keys made in the same millisecond: by id, in the
        // store's collation, so only the set of them is compared)
        const every = (await listEveryKey(store.db)).filter((k) => [zed.id, abe.id].includes(k.account_id));
        assert.deepEqual(
          every.map((k) => k.account_name),
          ["abe-every", "abe-every", "zed-every"],
        );
        assert.deepEqual(new Set(every.slice(0, 2).map((k) => k.id)), new Set([a1.id, a2.id]));
        assert.ok(every[0]!.created_at <= every[1]!.created_at);
        assert.equal(every[2]!.id, z1.id);
        const first = every[0]!.id === a1.id ? a1 : a2;
        assert.deepEqual(plain(every[0]!), { ...first, account_name: "abe-every" });
        assert.deepEqual(
          (await listEveryKey(store.db, { accountId: abe.id })).map((k) => k.id),
          every.slice(0, 2).map((k) => k.id),
        );
        assert.deepEqual(
          (await listEveryKey(store.db, { keyId: z1.id })).map((k) => k.id),
          [z1.id],
        );
      });
    });
  });
}
