// The console API's administration (src/http/routes/console/admin.ts) over real HTTP on
// loopback, on SQLite and PostgreSQL: members and owners refused, accounts (a disabled one
// refused on /v1 at once), keys' and accounts' money budgets set and enforced, and users.
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { consoleApiSuite, costOf, noSecretInTheLogs, refused, STORES, words } from "./support/console-api.ts";
import type { ConsoleSession, TestGateway } from "./support/gateway.ts";
import { storeSuite } from "./support/postgres.ts";

/** Start of the next UTC month: when a monthly budget set now resets. */
function nextMonth(now = new Date()): number {
  return Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
}

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

    describe("administration", () => {
      test("members and owners get console_forbidden on every admin call", async () => {
        for (const who of [member, owner]) {
          refused(await get("/admin/accounts", who), 403, "console_forbidden");
          refused(await get("/admin/users", who), 403, "console_forbidden");
          refused(await get("/admin/keys", who), 403, "console_forbidden");
          refused(
            await call("PATCH", `/admin/keys/${key.id}`, { cookie: who.cookie, body: { budget_nanos: 1 } }),
            403,
            "console_forbidden",
          );
          refused(
            await call("POST", "/admin/accounts", { cookie: who.cookie, body: { name: "x" } }),
            403,
            "console_forbidden",
          );
          refused(
            await call("PATCH", `/admin/accounts/${acme}`, { cookie: who.cookie, body: { disabled: true } }),
            403,
            "console_forbidden",
          );
          refused(
            await call("POST", "/admin/users", {
              cookie: who.cookie,
              body: { email: "x@y.z", account_id: acme, role: "admin", password: "12345678" },
            }),
            403,
            "console_forbidden",
          );
          refused(
            await call("PATCH", `/admin/users/${who.id}`, { cookie: who.cookie, body: { role: "admin" } }),
            403,
            "console_forbidden",
          );
        }
        assert.equal((await get("/me", owner)).body.user.role, "owner", "nothing changed");
      });

      test("accounts: list, create, change plan and quota, disable (refused on /v1 at once)", async () => {
        const list = await get("/admin/accounts", admin);
        assert.equal(list.status, 200);
        assert.ok(list.body.data.some((a: any) => a.id === acme && a.name === "acme"));
        const created = await call("POST", "/admin/accounts", {
          cookie: admin.cookie,
          body: { name: "newco", plan_id: "demo-only" },
        });
        assert.equal(created.status, 201, created.text);
        assert.equal(created.body.account.plan_id, "demo-only");
        assert.equal(created.body.account.quota_tokens, 1_000_000);
        refused(
          await call("POST", "/admin/accounts", { cookie: admin.cookie, body: { name: "newco" } }),
          409,
          "conflict",
        );
        refused(
          await call("POST", "/admin/accounts", {
            cookie: admin.cookie,
            body: { name: "x", plan_id: "gold" },
          }),
          400,
          "invalid_request",
          "plan_id",
        );
        const id = created.body.account.id;
        let res = await call("PATCH", `/admin/accounts/${id}`, {
          cookie: admin.cookie,
          body: { plan_id: "default", quota_tokens: 777 },
        });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.account.plan_id, "default");
        assert.equal(res.body.account.quota_tokens, 777);
        assert.equal(res.body.account.quota_source, "account");
        res = await call("PATCH", `/admin/accounts/${id}`, {
          cookie: admin.cookie,
          body: { quota_tokens: null },
        });
        assert.equal(res.body.account.quota_tokens, 1_000_000_000);
        assert.equal(res.body.account.quota_source, "plan");

        const k = await gw.key(id);
        secrets.push(k.secret);
        assert.equal((await v1Status(k.secret)).status, 200);
        res = await call("PATCH", `/admin/accounts/${id}`, {
          cookie: admin.cookie,
          body: { disabled: true },
        });
        assert.equal(res.body.account.disabled, true);
        assert.deepEqual(await v1Status(k.secret), { status: 403, code: "account_disabled" });
        res = await call("PATCH", `/admin/accounts/${id}`, {
          cookie: admin.cookie,
          body: { disabled: false },
        });
        assert.equal((await v1Status(k.secret)).status, 200);
        refused(
          await call("PATCH", "/admin/accounts/acc_nope", { cookie: admin.cookie, body: { disabled: true } }),
          404,
          "not_found",
        );
        refused(
          await call("PATCH", `/admin/accounts/${id}`, { cookie: admin.cookie, body: { name: "renamed" } }),
          400,
          "invalid_request",
          "name",
        );
      });

      describe("money budgets", () => {
        let spender: string;
        let spenderOwner: ConsoleSession;
        let wallet: { id: string; secret: string };
        /** what the key spent, by hand */
        let spent = 0;

        before(async () => {
          spender = await gw.account("spender");
          spenderOwner = await gw.consoleUser(spender, { role: "owner" });
          wallet = await gw.key(spender, { name: "wallet" });
          secrets.push(wallet.secret, spenderOwner.password, spenderOwner.cookie.split("=")[1]!);
          // seven prompt tokens, three of them cache reads, and ten of output
          const content = "pay for these five words mock:tokens=10 mock:cache";
          const paid = await chat(wallet.secret, content);
          assert.equal(paid.status, 200);
          spent = costOf(words(content), 10, 3);
          assert.equal(spent, 4 * 2_000 + 3 * 500 + 10 * 8_000);
          const record = (await get("/records", spenderOwner)).body.data[0];
          assert.deepEqual(
            [record.request_id, record.cached_tokens, record.cost_nanos, record.cost_usd, record.cost_source],
            [paid.id, 3, spent, 0.0000895, "config"],
          );
        });

        test("an admin sets a key's budget: the key's views show spent, left and the reset date", async () => {
          const listed = await get(`/admin/keys?account=${spender}`, admin);
          assert.equal(listed.status, 200, listed.text);
          assert.deepEqual(
            listed.body.data.map((k: any) => [
              k.id,
              k.account_id,
              k.account_name,
              k.spent_nanos,
              k.budget_nanos,
            ]),
            [[wallet.id, spender, "spender", spent, null]],
          );
          const all = await get("/admin/keys", admin);
          assert.ok(all.body.data.some((k: any) => k.id === key.id && k.account_name === "acme"));
          assert.ok(!JSON.stringify(all.body).includes(wallet.secret));

          const res = await call("PATCH", `/admin/keys/${wallet.id}`, {
            cookie: admin.cookie,
            body: { budget_nanos: 5_000_000_000, budget_period: "month" },
          });
          assert.equal(res.status, 200, res.text);
          const expected = {
            budget_nanos: 5_000_000_000,
            budget_period: "month",
            spent_nanos: spent,
            left_nanos: 5_000_000_000 - spent,
            budget_resets_at: nextMonth(),
          };
          const pick = (k: any) => Object.fromEntries(Object.keys(expected).map((f) => [f, k[f]]));
          assert.deepEqual(pick(res.body.key), expected);
          assert.equal(res.body.key.account_name, "spender");
          // the owner's keys page reads the same
          const mine = (await get("/keys", spenderOwner)).body.data.find((k: any) => k.id === wallet.id);
          assert.deepEqual(pick(mine), expected);
          // the amount alone keeps the period; the period alone keeps the amount
          let patched = await call("PATCH", `/admin/keys/${wallet.id}`, {
            cookie: admin.cookie,
            body: { budget_nanos: 7 },
          });
          assert.deepEqual([patched.body.key.budget_nanos, patched.body.key.budget_period], [7, "month"]);
          assert.equal(patched.body.key.left_nanos, 0, "never below 0");
          patched = await call("PATCH", `/admin/keys/${wallet.id}`, {
            cookie: admin.cookie,
            body: { budget_period: "none" },
          });
          assert.deepEqual(
            [
              patched.body.key.budget_nanos,
              patched.body.key.budget_period,
              patched.body.key.budget_resets_at,
            ],
            [7, "none", null],
          );
          patched = await call("PATCH", `/admin/keys/${wallet.id}`, {
            cookie: admin.cookie,
            body: { budget_nanos: null },
          });
          assert.deepEqual(
            [patched.body.key.budget_nanos, patched.body.key.left_nanos, patched.body.key.spent_nanos],
            [null, null, spent],
          );
        });

        test("an admin sets an account's budget with its other settings; the overview shows it", async () => {
          const res = await call("PATCH", `/admin/accounts/${spender}`, {
            cookie: admin.cookie,
            body: { quota_tokens: 5000, budget_nanos: 25_000_000_000, budget_period: "month" },
          });
          assert.equal(res.status, 200, res.text);
          assert.equal(res.body.account.quota_tokens, 5000);
          const overview = (await get("/overview", spenderOwner)).body;
          assert.deepEqual(
            [
              overview.account.budget_nanos,
              overview.account.budget_period,
              overview.account.spent_nanos,
              overview.account.left_nanos,
              overview.account.budget_resets_at,
            ],
            [25_000_000_000, "month", spent, 25_000_000_000 - spent, nextMonth()],
          );
          assert.equal(overview.today.cost_nanos, spent);
          const listed = (await get("/admin/accounts", admin)).body.data.find((a: any) => a.id === spender);
          assert.equal(listed.left_nanos, 25_000_000_000 - spent);
          const cleared = await call("PATCH", `/admin/accounts/${spender}`, {
            cookie: admin.cookie,
            body: { budget_nanos: null, quota_tokens: null },
          });
          assert.deepEqual(
            [
              cleared.body.account.budget_nanos,
              cleared.body.account.budget_period,
              cleared.body.account.left_nanos,
            ],
            [null, "none", null],
          );
        });

        test("a budget set in the console refuses the next call on /v1 at once; removing it lifts that", async () => {
          for (const [path, body] of [
            [`/admin/keys/${wallet.id}`, { budget_nanos: spent, budget_period: "month" }],
            [`/admin/accounts/${spender}`, { budget_nanos: spent }],
          ] as const) {
            const set = await call("PATCH", path, { cookie: admin.cookie, body });
            assert.equal(set.status, 200, set.text);
            try {
              // no wait: this instance dropped its key cache
              const refusedCall = await chat(wallet.secret, "one more mock:tokens=1");
              assert.deepEqual([refusedCall.status, refusedCall.code], [429, "budget_exceeded"], path);
            } finally {
              const lifted = await call("PATCH", path, {
                cookie: admin.cookie,
                body: { budget_nanos: null },
              });
              assert.equal(lifted.status, 200);
            }
          }
          const again = await chat(wallet.secret, "and now mock:tokens=1");
          assert.equal(again.status, 200);
        });

        test("bad budgets are 400s naming the field, and change nothing", async () => {
          const bad: [string, unknown, string][] = [
            [`/admin/keys/${wallet.id}`, { budget_nanos: -1 }, "budget_nanos"],
            [`/admin/keys/${wallet.id}`, { budget_nanos: 1.5 }, "budget_nanos"],
            [`/admin/keys/${wallet.id}`, { budget_nanos: "5" }, "budget_nanos"],
            [`/admin/keys/${wallet.id}`, { budget_nanos: 9_000_000_000_000_001 }, "budget_nanos"],
            [`/admin/keys/${wallet.id}`, { budget_period: "week" }, "budget_period"],
            // a period needs an amount to apply to
            [`/admin/keys/${wallet.id}`, { budget_period: "month" }, "budget_period"],
            [`/admin/keys/${wallet.id}`, { budget_nanos: null, budget_period: "month" }, "budget_period"],
            [`/admin/keys/${wallet.id}`, { limit_tokens: 5 }, "limit_tokens"],
            [`/admin/accounts/${spender}`, { budget_nanos: -5 }, "budget_nanos"],
            [`/admin/accounts/${spender}`, { budget_period: "month" }, "budget_period"],
            [`/admin/accounts/${spender}`, { budget_usd: 5 }, "budget_usd"],
          ];
          for (const [path, body, param] of bad)
            refused(await call("PATCH", path, { cookie: admin.cookie, body }), 400, "invalid_request", param);
          refused(
            await call("PATCH", `/admin/keys/${wallet.id}`, { cookie: admin.cookie, body: {} }),
            400,
            "invalid_request",
          );
          refused(await get("/admin/keys?bogus=1", admin), 400, "invalid_request", "bogus");
          refused(
            await call("PATCH", "/admin/keys/key_nope", { cookie: admin.cookie, body: { budget_nanos: 1 } }),
            404,
            "not_found",
          );
          // owners manage their keys, but not their budgets
          refused(
            await call("PATCH", `/keys/${wallet.id}`, {
              cookie: spenderOwner.cookie,
              body: { budget_nanos: 1 },
            }),
            400,
            "invalid_request",
            "budget_nanos",
          );
          const k = (await get(`/admin/keys?account=${spender}`, admin)).body.data[0];
          assert.deepEqual([k.budget_nanos, k.budget_period], [null, "none"]);
          const a = (await get("/admin/accounts", admin)).body.data.find((x: any) => x.id === spender);
          assert.deepEqual([a.budget_nanos, a.budget_period], [null, "none"]);
        });
      });

      test("users: list, create (e-mail unique, role, password rules), change role, password, disable", async () => {
        const created = await call("POST", "/admin/users", {
          cookie: admin.cookie,
          body: {
            email: "New.Person@Example.Test",
            account_id: acme,
            role: "member",
            password: "first-password",
          },
        });
        assert.equal(created.status, 201, created.text);
        const u = created.body.user;
        assert.equal(u.email, "new.person@example.test");
        assert.equal(u.role, "member");
        assert.ok(!created.text.includes("first-password"));
        const cookie = await gw.consoleLogin("new.person@example.test", "first-password");
        secrets.push("first-password", cookie.split("=")[1]!);

        refused(
          await call("POST", "/admin/users", {
            cookie: admin.cookie,
            body: {
              email: "new.person@example.test",
              account_id: other,
              role: "member",
              password: "other-password",
            },
          }),
          409,
          "conflict",
        );
        const bad = { email: "b@example.test", account_id: acme, role: "member", password: "long-enough" };
        refused(
          await call("POST", "/admin/users", {
            cookie: admin.cookie,
            body: { ...bad, email: "not-an-email" },
          }),
          400,
          "invalid_request",
          "email",
        );
        refused(
          await call("POST", "/admin/users", { cookie: admin.cookie, body: { ...bad, role: "root" } }),
          400,
          "invalid_request",
          "role",
        );
        refused(
          await call("POST", "/admin/users", { cookie: admin.cookie, body: { ...bad, password: "short" } }),
          400,
          "invalid_request",
          "password",
        );
        refused(
          await call("POST", "/admin/users", {
            cookie: admin.cookie,
            body: { ...bad, account_id: "acc_nope" },
          }),
          400,
          "invalid_request",
          "account_id",
        );

        const list = await get("/admin/users", admin);
        assert.ok(list.body.data.some((x: any) => x.id === u.id));
        assert.ok(!list.text.includes("scrypt"), "no password hashes");
        const ofOther = await get(`/admin/users?account=${other}`, admin);
        assert.deepEqual(
          ofOther.body.data.map((x: any) => x.id),
          [outsider.id],
        );

        let res = await call("PATCH", `/admin/users/${u.id}`, {
          cookie: admin.cookie,
          body: { role: "owner" },
        });
        assert.equal(res.body.user.role, "owner");
        assert.equal(
          (await call("GET", "/me", { cookie })).body.user.role,
          "owner",
          "the session sees the new role at once",
        );
        // a new password ends the user's sessions
        res = await call("PATCH", `/admin/users/${u.id}`, {
          cookie: admin.cookie,
          body: { password: "second-password" },
        });
        assert.equal(res.status, 200);
        secrets.push("second-password");
        refused(await call("GET", "/me", { cookie }), 401, "console_unauthenticated");
        refused(
          await call("POST", "/login", { body: { email: u.email, password: "first-password" } }),
          401,
          "invalid_credentials",
        );
        const again = await gw.consoleLogin(u.email, "second-password");
        // disabling ends the sessions and refuses logins
        res = await call("PATCH", `/admin/users/${u.id}`, { cookie: admin.cookie, body: { disabled: true } });
        assert.equal(res.body.user.disabled, true);
        refused(await call("GET", "/me", { cookie: again }), 401, "console_unauthenticated");
        refused(
          await call("POST", "/login", { body: { email: u.email, password: "second-password" } }),
          401,
          "invalid_credentials",
        );

        refused(
          await call("PATCH", `/admin/users/${admin.id}`, { cookie: admin.cookie, body: { role: "member" } }),
          409,
          "conflict",
        );
        refused(
          await call("PATCH", `/admin/users/${admin.id}`, { cookie: admin.cookie, body: { disabled: true } }),
          409,
          "conflict",
        );
        refused(
          await call("PATCH", "/admin/users/usr_nope", { cookie: admin.cookie, body: { role: "member" } }),
          404,
          "not_found",
        );
        assert.equal((await get("/me", admin)).body.user.role, "admin");
      });
    });

    noSecretInTheLogs(api);
  });
}
