// The console API's keys (src/http/routes/console/keys.ts) over real HTTP on loopback, on
// SQLite and PostgreSQL: the list with consumption, create (the secret once), rename, limit,
// disable, enable and delete, each taking effect on /v1 at once, and another account's keys.
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { consoleApiSuite, noSecretInTheLogs, refused, STORES } from "./support/console-api.ts";
import type { ConsoleSession, TestGateway } from "./support/gateway.ts";
import { storeSuite } from "./support/postgres.ts";

for (const store of STORES) {
  describe(`console API (${store} store)`, await storeSuite(store), () => {
    const api = consoleApiSuite(store);
    const { call, get, chat, v1Status, secrets } = api;
    let gw: TestGateway;
    let acme: string;
    let other: string;
    let owner: ConsoleSession;
    let member: ConsoleSession;
    let outsider: ConsoleSession;
    let admin: ConsoleSession;
    let key: { id: string; secret: string };
    before(() => {
      ({ gw, acme, other, owner, member, outsider, admin, key } = api);
    });

    describe("keys", () => {
      // what the list shows a key consumed and spent comes from its calls: a priced one, and
      // one that fails upstream and costs nothing
      before(async () => {
        await chat(key.secret, "hello keys mock:tokens=5");
        await chat(key.secret, "this one fails mock:status=500");
      });

      test("list: newest first, with consumption; members may read them", async () => {
        const res = await get("/keys", member);
        assert.equal(res.status, 200);
        assert.equal(res.body.data.length, 1);
        const k = res.body.data[0];
        assert.deepEqual(Object.keys(k).sort(), [
          "allowed_models",
          "budget_nanos",
          "budget_period",
          "budget_resets_at",
          "created_at",
          "disabled",
          "id",
          "left_nanos",
          "limit_tokens",
          "name",
          "prefix",
          "session_budget_nanos",
          "session_limit_tokens",
          "spent_nanos",
          "used_tokens",
        ]);
        assert.equal(k.id, key.id);
        assert.equal(k.used_tokens, (await gw.recorded("key_id", key.id)).tokens);
        const spent = await gw.gateway.deps.store.db
          .selectFrom("call_records")
          .select((eb) => eb.fn.sum<number>("cost_nanos").as("cost"))
          .where("key_id", "=", key.id)
          .executeTakeFirstOrThrow();
        assert.ok(Number(spent.cost) > 0);
        assert.equal(
          k.spent_nanos,
          Number(spent.cost),
          "the key's spending is the sum of its records' costs",
        );
        assert.ok(!JSON.stringify(res.body).includes(key.secret));
      });

      test("owners create keys (the secret once) that work on /v1 at once; members may not", async () => {
        refused(
          await call("POST", "/keys", { cookie: member.cookie, body: { name: "m" } }),
          403,
          "console_forbidden",
        );
        const res = await call("POST", "/keys", {
          cookie: owner.cookie,
          body: { name: "app-two", limit_tokens: 5000 },
        });
        assert.equal(res.status, 201, res.text);
        assert.match(res.body.secret, /^sk-[A-Za-z0-9]{43}$/);
        secrets.push(res.body.secret);
        assert.equal(res.body.key.name, "app-two");
        assert.equal(res.body.key.limit_tokens, 5000);
        assert.equal(res.body.key.prefix, res.body.secret.slice(0, res.body.key.prefix.length));
        assert.equal((await chat(res.body.secret, "new key works mock:tokens=2")).status, 200);
        const list = await get("/keys", owner);
        assert.deepEqual(
          list.body.data.map((k: any) => k.name),
          ["app-two", "app-one"],
        );
        assert.ok(!list.text.includes(res.body.secret), "the secret is shown only once");
        // no body at all: an unnamed key without limit
        const bare = await call("POST", "/keys", { cookie: owner.cookie });
        assert.equal(bare.status, 201);
        assert.equal(bare.body.key.name, null);
        secrets.push(bare.body.secret);
        refused(
          await call("POST", "/keys", { cookie: owner.cookie, body: { limit_tokens: -1 } }),
          400,
          "invalid_request",
          "limit_tokens",
        );
        refused(
          await call("POST", "/keys", { cookie: owner.cookie, body: { secret: "sk-mine" } }),
          400,
          "invalid_request",
          "secret",
        );
        refused(await call("POST", "/keys", { cookie: owner.cookie, raw: "[1]" }), 400, "invalid_request");
        refused(await call("POST", "/keys", { cookie: owner.cookie, raw: "{oops" }), 400, "invalid_json");
      });

      test("rename, limit, disable and enable: /v1 honours each change at once", async () => {
        const k = await gw.key(acme, { name: "toggle" });
        secrets.push(k.secret);
        assert.equal((await v1Status(k.secret)).status, 200);
        refused(
          await call("PATCH", `/keys/${k.id}`, { cookie: member.cookie, body: { disabled: true } }),
          403,
          "console_forbidden",
        );
        let res = await call("PATCH", `/keys/${k.id}`, { cookie: owner.cookie, body: { disabled: true } });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.key.disabled, true);
        // no wait: this instance dropped its key cache
        assert.deepEqual(await v1Status(k.secret), { status: 403, code: "key_disabled" });
        res = await call("PATCH", `/keys/${k.id}`, {
          cookie: owner.cookie,
          body: { disabled: false, name: "renamed" },
        });
        assert.equal(res.body.key.disabled, false);
        assert.equal(res.body.key.name, "renamed");
        assert.equal((await v1Status(k.secret)).status, 200);
        res = await call("PATCH", `/keys/${k.id}`, { cookie: owner.cookie, body: { limit_tokens: 0 } });
        assert.equal(res.body.key.limit_tokens, 0);
        assert.equal((await chat(k.secret, "over the limit")).status, 429);
        res = await call("PATCH", `/keys/${k.id}`, {
          cookie: owner.cookie,
          body: { limit_tokens: null, name: null },
        });
        assert.equal(res.body.key.limit_tokens, null);
        assert.equal(res.body.key.name, null);
        assert.equal((await chat(k.secret, "no limit again mock:tokens=1")).status, 200);
        refused(
          await call("PATCH", `/keys/${k.id}`, { cookie: owner.cookie, body: {} }),
          400,
          "invalid_request",
        );
        refused(
          await call("PATCH", `/keys/${k.id}`, { cookie: owner.cookie, body: { disabled: "yes" } }),
          400,
          "invalid_request",
          "disabled",
        );
      });

      test("allowed models: set on create and change, refused outside the plan, model_not_found beyond the list, audited", async () => {
        const res = await call("POST", "/keys", {
          cookie: owner.cookie,
          body: { name: "demo-only", allowed_models: ["demo"] },
        });
        assert.equal(res.status, 201, res.text);
        secrets.push(res.body.secret);
        assert.deepEqual(res.body.key.allowed_models, ["demo"]);
        const id = res.body.key.id;
        assert.equal((await chat(res.body.secret, "outside the list")).code, "model_not_found");
        assert.equal((await chat(res.body.secret, "inside the list", "demo")).status, 200);
        refused(
          await call("PATCH", `/keys/${id}`, {
            cookie: owner.cookie,
            body: { allowed_models: ["demo", "nope"] },
          }),
          400,
          "invalid_request",
          "allowed_models[1]",
        );
        refused(
          await call("PATCH", `/keys/${id}`, { cookie: member.cookie, body: { allowed_models: null } }),
          403,
          "console_forbidden",
        );
        const patched = await call("PATCH", `/keys/${id}`, {
          cookie: owner.cookie,
          body: { allowed_models: null },
        });
        assert.equal(patched.status, 200, patched.text);
        assert.equal(patched.body.key.allowed_models, null);
        assert.equal((await chat(res.body.secret, "every model again mock:tokens=1")).status, 200);
        const entries = await gw.gateway.deps.store.db
          .selectFrom("audit_log")
          .selectAll()
          .where("resource", "=", "keys")
          .where("resource_id", "=", id)
          .orderBy("created_at")
          .execute();
        assert.deepEqual(
          entries.map((e) => [e.action, e.actor]),
          [
            ["create", `user:${owner.email}`],
            ["update", `user:${owner.email}`],
          ],
        );
        assert.deepEqual(JSON.parse(entries[1]!.before!).allowed_models, ["demo"]);
        assert.equal(JSON.parse(entries[1]!.after!).allowed_models, null);
      });

      test("delete: the key stops working on /v1 at once and leaves the list; its records stay", async () => {
        const k = await gw.key(acme, { name: "doomed" });
        secrets.push(k.secret);
        const used = await chat(k.secret, "before deletion mock:tokens=2");
        assert.equal(used.status, 200);
        refused(await call("DELETE", `/keys/${k.id}`, { cookie: member.cookie }), 403, "console_forbidden");
        const res = await call("DELETE", `/keys/${k.id}`, { cookie: owner.cookie });
        assert.equal(res.status, 204);
        assert.deepEqual(await v1Status(k.secret), { status: 401, code: "invalid_api_key" });
        const refusedChat = await chat(k.secret, "after deletion");
        assert.equal(refusedChat.status, 401);
        const list = await get("/keys", owner);
        assert.ok(!list.body.data.some((x: any) => x.id === k.id));
        refused(await call("DELETE", `/keys/${k.id}`, { cookie: owner.cookie }), 404, "not_found");
        refused(
          await call("PATCH", `/keys/${k.id}`, { cookie: owner.cookie, body: { disabled: false } }),
          404,
          "not_found",
        );
        assert.equal((await v1Status(k.secret)).status, 401, "not revived by a refused change");
        // its record is still there, with its key
        const record = await gw.record(used.id);
        assert.equal(record.key_id, k.id);
        const records = await get(`/records?key=${k.id}`, owner);
        assert.equal(records.status, 200);
        assert.ok(records.body.data.some((r: any) => r.request_id === used.id && r.key_name === "doomed"));
      });

      test("another account's keys are not_found; an admin manages any account's keys with ?account=", async () => {
        const theirs = await gw.key(other, { name: "theirs" });
        secrets.push(theirs.secret);
        refused(
          await call("PATCH", `/keys/${theirs.id}`, { cookie: owner.cookie, body: { disabled: true } }),
          404,
          "not_found",
        );
        refused(await call("DELETE", `/keys/${theirs.id}`, { cookie: owner.cookie }), 404, "not_found");
        refused(await call("DELETE", "/keys/not%20an%20id", { cookie: owner.cookie }), 404, "not_found");
        assert.equal((await v1Status(theirs.secret)).status, 200);
        const res = await call("PATCH", `/keys/${theirs.id}?account=${other}`, {
          cookie: admin.cookie,
          body: { disabled: true },
        });
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(await v1Status(theirs.secret), { status: 403, code: "key_disabled" });
        const created = await call("POST", `/keys?account=${other}`, {
          cookie: admin.cookie,
          body: { name: "by-admin" },
        });
        assert.equal(created.status, 201);
        secrets.push(created.body.secret);
        const list = await get("/keys", outsider);
        assert.ok(list.body.data.some((k: any) => k.name === "by-admin"));
      });
    });

    noSecretInTheLogs(api);
  });
}
