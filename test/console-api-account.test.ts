// The console API's account views (src/http/routes/console/account.ts) over real HTTP on
// loopback, on SQLite and PostgreSQL: the overview with calls made through /v1, models and
// plans, another account named with ?account= (an admin's right, a member's not_found), and
// every view refused to a client that is logged out.
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { updateAccount } from "../src/accounts/accounts.ts";
import { DAY_MS, utcDay } from "../src/records/days.ts";
import { consoleApiSuite, costOf, noSecretInTheLogs, refused, STORES, words } from "./support/console-api.ts";
import { type ConsoleSession, TEST_MODEL, type TestGateway } from "./support/gateway.ts";
import { storeSuite } from "./support/postgres.ts";

for (const store of STORES) {
  describe(`console API (${store} store)`, await storeSuite(store), () => {
    const api = consoleApiSuite(store);
    const { call, get, chat } = api;
    let gw: TestGateway;
    let acme: string;
    let other: string;
    let member: ConsoleSession;
    let admin: ConsoleSession;
    let key: { id: string; secret: string };
    before(() => {
      ({ gw, acme, other, member, admin, key } = api);
    });

    describe("account views", () => {
      test("overview: account, plan, today's tokens and calls, daily rows by key and model", async () => {
        const calls = [
          await chat(key.secret, "hello overview mock:tokens=5"),
          await chat(key.secret, "second call here mock:tokens=3"),
          await chat(key.secret, "this one fails mock:status=500"),
        ];
        assert.deepEqual(
          calls.map((c) => c.status),
          [200, 200, 502],
        );
        const res = await get("/overview", member);
        assert.equal(res.status, 200, res.text);
        const { account, plan, today, daily } = res.body;
        assert.equal(account.id, acme);
        assert.equal(plan.id, "default");
        assert.deepEqual(plan.models, [TEST_MODEL, "demo"]);
        const recorded = await gw.recorded("account_id", acme);
        assert.deepEqual({ tokens: today.tokens, calls: today.calls }, recorded);
        assert.equal(account.used_tokens, recorded.tokens);
        assert.equal(
          today.tokens,
          words("hello overview mock:tokens=5") + 5 + words("second call here mock:tokens=3") + 3,
        );
        const row = daily.find((d: any) => d.key_id === key.id && d.model === TEST_MODEL);
        assert.ok(row, JSON.stringify(daily));
        assert.equal(row.day, utcDay(Date.now()));
        assert.equal(row.key_prefix, key.secret.slice(0, row.key_prefix.length));
        assert.equal(row.key_name, "app-one");
        assert.equal(row.calls, 3);
        // what the calls cost, by hand (the failed one nothing), in the day's row and in today
        const cost =
          costOf(words("hello overview mock:tokens=5"), 5) +
          costOf(words("second call here mock:tokens=3"), 3);
        assert.equal(cost, 78_000);
        assert.equal(row.cost_nanos, cost);
        assert.equal(today.cost_nanos, cost);
        // no budget: spent in total, nothing left to count, no reset
        assert.deepEqual(
          [
            account.budget_nanos,
            account.budget_period,
            account.spent_nanos,
            account.left_nanos,
            account.budget_resets_at,
          ],
          [null, "none", cost, null, null],
        );
        // the chart covers 30 days: older aggregates are left out
        const db = gw.gateway.deps.store.db;
        await db
          .insertInto("daily_usage")
          .values([
            {
              account_id: acme,
              day: utcDay(Date.now() - 29 * DAY_MS),
              key_id: key.id,
              model: TEST_MODEL,
              prompt_tokens: 1,
              completion_tokens: 1,
              total_tokens: 2,
              calls: 1,
            },
            {
              account_id: acme,
              day: utcDay(Date.now() - 30 * DAY_MS),
              key_id: key.id,
              model: TEST_MODEL,
              prompt_tokens: 1,
              completion_tokens: 1,
              total_tokens: 2,
              calls: 1,
            },
          ])
          .execute();
        const days = (await get("/overview", member)).body.daily.map((d: any) => d.day);
        assert.ok(days.includes(utcDay(Date.now() - 29 * DAY_MS)));
        assert.ok(!days.includes(utcDay(Date.now() - 30 * DAY_MS)));
      });

      test("models and plans", async () => {
        const models = await get("/models", member);
        assert.equal(models.status, 200);
        assert.deepEqual(models.body, {
          data: [
            { id: TEST_MODEL, owned_by: "acme" },
            { id: "demo", owned_by: "chat-gateway" },
          ],
        });
        const plans = await get("/plans", member);
        assert.equal(plans.status, 200);
        assert.equal(plans.body.current.id, "default");
        assert.deepEqual(
          plans.body.plans.map((p: any) => [p.id, p.quota_tokens, p.models]),
          [
            ["default", 1_000_000_000, [TEST_MODEL, "demo"]],
            ["demo-only", 1_000_000, ["demo"]],
          ],
        );
        assert.deepEqual(Object.keys(plans.body.current.rate_limits).sort(), ["account", "key"]);
        // content safety as it applies to the account, so client authors can see whether
        // `stream: true` still gets SSE (issue #17)
        assert.deepEqual(plans.body.safety, { enabled: false, streaming: "json" });
        const db = gw.gateway.deps.store.db;
        await updateAccount(db, acme, { safety: "on", safety_streaming: "reviewed" });
        try {
          assert.deepEqual((await get("/plans", member)).body.safety, {
            enabled: true,
            streaming: "reviewed",
          });
        } finally {
          await updateAccount(db, acme, { safety: null, safety_streaming: null });
        }
      });

      test("a member naming another account gets not_found; an admin may act on any account", async () => {
        for (const path of ["/overview", "/models", "/plans", "/keys", "/records", "/tickets"]) {
          refused(await get(`${path}?account=${other}`, member), 404, "not_found", "account");
          refused(await get(`${path}?account=acc_doesnotexist00`, member), 404, "not_found", "account");
        }
        // naming one's own account is fine
        assert.equal((await get(`/overview?account=${acme}`, member)).status, 200);
        const asAdmin = await get(`/overview?account=${acme}`, admin);
        assert.equal(asAdmin.status, 200);
        assert.equal(asAdmin.body.account.id, acme);
        refused(await get("/overview?account=acc_doesnotexist00", admin), 404, "not_found");
        refused(await get("/overview?acount=x", member), 400, "invalid_request", "acount");
        refused(
          await get(`/overview?account=${acme}&account=${acme}`, member),
          400,
          "invalid_request",
          "account",
        );
      });

      test("logged out, every account view is console_unauthenticated", async () => {
        for (const path of [
          "/overview",
          "/models",
          "/plans",
          "/keys",
          "/records",
          "/records/export",
          "/tickets",
          "/admin/accounts",
        ])
          refused(await get(path, undefined), 401, "console_unauthenticated");
        refused(await call("POST", "/keys", { body: {} }), 401, "console_unauthenticated");
      });
    });

    noSecretInTheLogs(api);
  });
}
