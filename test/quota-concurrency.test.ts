// Issue: the quota ledger is atomic. 50 concurrent requests at a key whose limit fits 10:
// at most 10 reach the upstream and consumption never exceeds the limit; the same for an
// account's quota shared by two keys, and for a key's money budget (#18). Run on SQLite, on
// PostgreSQL and with Redis.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setBudget } from "../src/accounts/budgets.ts";
import { parseChatRequest } from "../src/domain/chat-request.ts";
import { nanosFor } from "../src/ledger/money.ts";
import { configuredPricing, costRule } from "../src/prices/pricing.ts";
import { DEFAULT_PROMPT_OVERHEADS, promptUpperBound } from "../src/providers/prompt-bound.ts";
import {
  pricedModels,
  startTestGateway,
  TEST_MODEL,
  TEST_PRICING,
  type TestGateway,
} from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { storeSuite } from "./support/postgres.ts";
import { needsRedis } from "./support/redis-instance.ts";

const MAX_TOKENS = 40;
const messages = [{ role: "user" as const, content: `count to forty please mock:tokens=${MAX_TOKENS}` }];
/** the prompt part of what the gateway holds for one of these requests */
const PROMPT_HOLD = promptUpperBound(
  parseChatRequest({ model: TEST_MODEL, messages, max_tokens: MAX_TOKENS }),
  DEFAULT_PROMPT_OVERHEADS,
);
/** what the gateway holds for one of these requests */
const HOLD = PROMPT_HOLD + MAX_TOKENS;
/** the most one of these requests can cost, in nanodollars: what a budget holds for it */
const HOLD_NANOS = nanosFor(
  { ...costRule(PROMPT_HOLD, configuredPricing(TEST_PRICING)), promptTokens: PROMPT_HOLD },
  HOLD,
);

async function fire(gw: TestGateway, secret: string): Promise<number> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify({ model: TEST_MODEL, messages, max_tokens: MAX_TOKENS }),
  });
  await res.arrayBuffer();
  return res.status;
}

for (const store of ["sqlite", "postgres", "postgres+redis"] as const) {
  describe(
    `quota under concurrency (${store})`,
    await (store === "postgres+redis" ? needsRedis() : storeSuite(store)),
    () => {
      let upstream: MockUpstream;
      let gw: TestGateway;
      before(async () => {
        // The upstream answers only after all 50 requests were decided: a call that settles
        // early (charged less than it held) would rightly free room for a latecomer.
        upstream = await startMockUpstream({ latencyMs: 1500 });
        // Refused at once rather than waiting for the calls in flight (test/no-false-refusals
        // covers the wait): what is tested here is that the hold is atomic.
        gw = await startTestGateway({
          upstream,
          store,
          config: { ledger: { wait_ms: 0 }, models: pricedModels(upstream) },
        });
      });
      after(async () => {
        await gw.close();
        await upstream.close();
      });

      it("a key whose limit fits 10 requests lets at most 10 of 50 through", async () => {
        upstream.reset();
        const account = await gw.account(`key-limit-${store}`);
        const key = await gw.key(account, { limit: HOLD * 10 });
        const statuses = await Promise.all(Array.from({ length: 50 }, () => fire(gw, key.secret)));
        const ok = statuses.filter((s) => s === 200).length;
        assert.equal(
          upstream.requests.length,
          ok,
          "every 200 is one upstream call and nothing else got through",
        );
        assert.equal(ok, 10);
        assert.equal(statuses.filter((s) => s === 429).length, 40);

        const row = await gw.gateway.deps.store.db
          .selectFrom("api_keys")
          .select(["used_tokens", "limit_tokens"])
          .where("id", "=", key.id)
          .executeTakeFirstOrThrow();
        assert.ok(row.used_tokens > 0);
        assert.ok(
          row.used_tokens <= HOLD * 10,
          `used ${row.used_tokens} must not exceed the limit ${HOLD * 10}`,
        );
        const recorded = await gw.recorded("key_id", key.id);
        assert.equal(recorded.calls, 50, "rejected calls are recorded too");
        assert.equal(recorded.tokens, row.used_tokens, "records add up to the key's counter");
        assert.equal(gw.gateway.deps.ledger.openReservations(), 0);
      });

      it("an account quota that fits 10 requests holds across two keys", async () => {
        upstream.reset();
        const account = await gw.account(`quota-${store}`, { quota: HOLD * 10 });
        const k1 = await gw.key(account);
        const k2 = await gw.key(account);
        const statuses = await Promise.all(
          Array.from({ length: 50 }, (_, i) => fire(gw, i % 2 ? k1.secret : k2.secret)),
        );
        const ok = statuses.filter((s) => s === 200).length;
        assert.equal(ok, 10);
        assert.equal(upstream.requests.length, 10);
        const row = await gw.gateway.deps.store.db
          .selectFrom("accounts")
          .select("used_tokens")
          .where("id", "=", account)
          .executeTakeFirstOrThrow();
        assert.ok(row.used_tokens <= HOLD * 10);
        assert.equal((await gw.recorded("account_id", account)).tokens, row.used_tokens);
        const perKey =
          (await gw.recorded("key_id", k1.id)).tokens + (await gw.recorded("key_id", k2.id)).tokens;
        assert.equal(perKey, row.used_tokens, "the keys' records add up to the account's counter");
        assert.equal(gw.gateway.deps.ledger.openReservations(), 0);
      });

      it("a key whose budget pays for 10 requests lets at most 10 of 50 through", async () => {
        upstream.reset();
        const account = await gw.account(`key-budget-${store}`);
        const key = await gw.key(account);
        const db = gw.gateway.deps.store.db;
        await setBudget(db, "api_keys", key.id, HOLD_NANOS * 10, "none");
        const statuses = await Promise.all(Array.from({ length: 50 }, () => fire(gw, key.secret)));
        const ok = statuses.filter((s) => s === 200).length;
        assert.equal(
          upstream.requests.length,
          ok,
          "every 200 is one upstream call and nothing else got through",
        );
        assert.equal(ok, 10);
        assert.equal(statuses.filter((s) => s === 429).length, 40);
        const row = await db
          .selectFrom("api_keys")
          .select(["spent_nanos", "reserved_nanos"])
          .where("id", "=", key.id)
          .executeTakeFirstOrThrow();
        const records = await db
          .selectFrom("call_records")
          .select((eb) => eb.fn.sum<number>("cost_nanos").as("n"))
          .where("key_id", "=", key.id)
          .executeTakeFirstOrThrow();
        assert.ok(row.spent_nanos > 0);
        assert.ok(row.spent_nanos <= HOLD_NANOS * 10, `spent ${row.spent_nanos} ≤ ${HOLD_NANOS * 10}`);
        assert.equal(Number(records.n), row.spent_nanos, "records add up to the key's spending");
        assert.equal(row.reserved_nanos, 0);
        assert.equal(gw.gateway.deps.ledger.openReservations(), 0);
      });

      it("sends one output bound upstream, the reserved one, when a client gives both", async () => {
        upstream.reset();
        const account = await gw.account(`both-bounds-${store}`);
        const key = await gw.key(account);
        const res = await fetch(`${gw.baseURL}/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
          body: JSON.stringify({ model: TEST_MODEL, messages, max_tokens: 5000, max_completion_tokens: 30 }),
        });
        await res.arrayBuffer();
        assert.equal(res.status, 200);
        const sent = upstream.requests[0]!.body;
        assert.equal(sent.max_completion_tokens, 30);
        assert.ok(!("max_tokens" in sent), "the larger, unreserved bound is not forwarded");
      });

      it("lowers max_tokens to what is left instead of refusing, down to the minimum", async () => {
        upstream.reset();
        const account = await gw.account(`lowered-${store}`);
        const key = await gw.key(account, { limit: PROMPT_HOLD + 20 });
        assert.equal(await fire(gw, key.secret), 200);
        const sent = upstream.requests[0]!.body;
        assert.equal(sent.max_tokens, 20, "the upstream is told to stay within the reservation");
      });
    },
  );
}
