import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import { storeSuite } from "../../test/support/postgres.ts";
import { suiteStore } from "../../test/support/suite-store.ts";
import {
  createAdminToken,
  listAdminTokens,
  looksLikeAdminToken,
  resolveAdminToken,
  revokeAdminToken,
  scopeAllows,
} from "./admin-tokens.ts";

test("scopes: full allows everything, keys and catalog read too, read only reads", () => {
  assert.equal(scopeAllows(["full"], "full"), true);
  assert.equal(scopeAllows(["full"], "catalog"), true);
  for (const scope of ["read", "keys", "catalog"] as const) assert.equal(scopeAllows([scope], "read"), true);
  assert.equal(scopeAllows(["read"], "keys"), false);
  assert.equal(scopeAllows(["keys"], "catalog"), false);
  assert.equal(scopeAllows(["catalog"], "keys"), false);
  assert.equal(scopeAllows(["keys", "catalog"], "full"), false);
  assert.equal(scopeAllows([], "read"), false);
});

test("only gwadmin- and 43 base64url characters look like a token", () => {
  assert.equal(looksLikeAdminToken(`gwadmin-${"a".repeat(43)}`), true);
  for (const t of [
    `gwadmin-${"a".repeat(42)}`,
    `gwadmin-${"a".repeat(44)}`,
    `sk-${"a".repeat(43)}`,
    `gwadmin-${"+".repeat(43)}`,
  ])
    assert.equal(looksLikeAdminToken(t), false, t);
});

for (const kind of ["sqlite", "postgres"] as const) {
  describe(kind, await storeSuite(kind), () => {
    const store = suiteStore(kind);

    test("made: shown once, only its hash and prefix stored, written to the audit log without them", async () => {
      const { token, secret } = await createAdminToken(
        store.db,
        { name: "ops", scopes: ["keys", "read"] },
        "cli",
      );
      assert.match(secret, /^gwadmin-[A-Za-z0-9_-]{43}$/);
      assert.match(token.id, /^adm_[0-9A-Za-z]{14}$/);
      assert.equal(token.prefix, secret.slice(0, 14));
      assert.deepEqual(token.scopes, ["read", "keys"], "in the list's order");
      const row = await store.db
        .selectFrom("admin_tokens")
        .selectAll()
        .where("id", "=", token.id)
        .executeTakeFirstOrThrow();
      assert.equal(row.secret_hash, createHash("sha256").update(secret).digest("hex"));
      for (const value of Object.values(row)) assert.ok(!String(value).includes(secret.slice(14)));
      const audit = await store.db
        .selectFrom("audit_log")
        .selectAll()
        .where("resource_id", "=", token.id)
        .execute();
      assert.deepEqual(
        audit.map((e) => [e.actor, e.action, e.resource]),
        [["cli", "create", "admin-tokens"]],
      );
      assert.ok(
        !JSON.stringify(audit).includes(secret.slice(14)) && !JSON.stringify(audit).includes(row.secret_hash),
      );
    });

    test("resolved while live; its use recorded at most once a minute; revoked: null at once", async () => {
      const { token, secret } = await createAdminToken(store.db, { name: "script", scopes: ["read"] }, "cli");
      const t0 = 1_800_000_000_000;
      assert.equal((await resolveAdminToken(store.db, secret, t0))?.id, token.id);
      const used = async () => (await listAdminTokens(store.db)).find((t) => t.id === token.id)!.last_used_at;
      assert.equal(await used(), t0);
      await resolveAdminToken(store.db, secret, t0 + 30_000);
      assert.equal(await used(), t0, "not again within the minute");
      await resolveAdminToken(store.db, secret, t0 + 61_000);
      assert.equal(await used(), t0 + 61_000);
      assert.equal(await resolveAdminToken(store.db, `${secret.slice(0, -1)}x`, t0), null);
      const revoked = await revokeAdminToken(store.db, token.id, "token:adm_other");
      assert.ok(revoked?.revoked_at);
      assert.equal(await resolveAdminToken(store.db, secret, t0 + 120_000), null);
      assert.deepEqual(
        await revokeAdminToken(store.db, token.id, "cli"),
        revoked,
        "revoking again changes nothing",
      );
      assert.equal(await revokeAdminToken(store.db, "adm_nosuchtoken00", "cli"), undefined);
      const audit = await store.db
        .selectFrom("audit_log")
        .select("action")
        .where("resource_id", "=", token.id)
        .execute();
      assert.deepEqual(audit.map((e) => e.action).sort(), ["create", "revoke"]);
    });
  });
}
