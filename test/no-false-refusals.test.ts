// Issue #9, item 3: no false refusals. Against an upstream that counts prompt tokens as a chat
// template does (ceil(characters of the messages JSON / 4) + 3, more than the text), 100
// concurrent requests on a key limited to 400 tokens: a request that does not fit only
// because calls in flight hold tokens waits for them, so every request that fits once earlier
// calls settle is answered (at least floor(400 / tokens per call) - 1), and used stays within
// 400. The same for 60 requests on an account with a quota of 300, and (#18) for 100 requests
// on a key with a money budget that pays for about ten. A request that does not fit what
// consumption leaves is refused at once, saying how many tokens remain.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setBudget } from "../src/accounts/budgets.ts";
import { ASK_MINIMUM_NANOS, checkBudgetHeld } from "./support/budget-books.ts";
import { type Answer, ask } from "./support/chat-call.ts";
import { pricedModels, startTestGateway, type TestGateway } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { needsRedis } from "./support/redis-instance.ts";

for (const store of ["sqlite", "postgres", "postgres+redis"] as const) {
  describe(`no false refusals (${store})`, await (store === "postgres+redis" ? needsRedis() : {}), () => {
    let upstream: MockUpstream;
    let gw: TestGateway;
    before(async () => {
      upstream = await startMockUpstream({ promptCount: "template", latencyMs: 100 });
      gw = await startTestGateway({ upstream, store, config: { models: pricedModels(upstream) } });
    });
    after(async () => {
      await gw?.close();
      await upstream?.close();
    });

    /** The charged tokens of the subject's answered calls, and its counter. */
    async function books(column: "key_id" | "account_id", id: string) {
      const rows = await gw.gateway.deps.store.db
        .selectFrom("call_records")
        .select(["total_tokens", "status"])
        .where(column, "=", id)
        .execute();
      const table = column === "key_id" ? "api_keys" : "accounts";
      const stored = await gw.gateway.deps.store.db
        .selectFrom(table)
        .select("used_tokens")
        .where("id", "=", id)
        .executeTakeFirstOrThrow();
      return {
        perCall: Math.max(...rows.filter((r) => r.status === "ok").map((r) => Number(r.total_tokens))),
        recorded: rows.reduce((sum, r) => sum + Number(r.total_tokens), 0),
        used: Number(stored.used_tokens),
      };
    }

    function check(answers: Answer[], limit: number, b: Awaited<ReturnType<typeof books>>) {
      const ok = answers.filter((a) => a.status === 200).length;
      const refusals = answers.filter((a) => a.status !== 200);
      assert.ok(b.used <= limit, `used ${b.used} ≤ ${limit}`);
      assert.equal(b.recorded, b.used, "the records add up to the counter");
      assert.ok(
        ok >= Math.floor(limit / b.perCall) - 1,
        `${ok} answered, at least floor(${limit} / ${b.perCall}) - 1 expected`,
      );
      for (const r of refusals) {
        assert.equal(r.status, 429);
        assert.notEqual(r.code, "tokens_held", "nobody gave up waiting: they were refused once nothing fit");
        assert.match(r.message!, /\(\d+ tokens left\)/, "a refusal says how many tokens remain");
      }
      return ok;
    }

    it("100 concurrent requests on a key limited to 400 tokens", async (t) => {
      const account = await gw.account(`key400-${store}`);
      const key = await gw.key(account, { limit: 400 });
      const answers = await Promise.all(Array.from({ length: 100 }, () => ask(gw.baseURL, key.secret)));
      const b = await books("key_id", key.id);
      const ok = check(answers, 400, b);
      t.diagnostic(`answered ${ok} of 100, ${b.perCall} tokens a call, used ${b.used} of 400`);
      assert.equal(gw.gateway.deps.ledger.openReservations(), 0);
    });

    it("60 concurrent requests on an account with a quota of 300, over two keys", async (t) => {
      const account = await gw.account(`quota300-${store}`, { quota: 300 });
      const keys = [await gw.key(account), await gw.key(account)];
      const answers = await Promise.all(
        Array.from({ length: 60 }, (_, i) => ask(gw.baseURL, keys[i % 2]!.secret)),
      );
      const b = await books("account_id", account);
      const ok = check(answers, 300, b);
      t.diagnostic(`answered ${ok} of 60, ${b.perCall} tokens a call, used ${b.used} of 300`);
    });

    it("100 concurrent requests on a key with a budget of $0.005", async (t) => {
      const account = await gw.account(`budget-${store}`);
      const key = await gw.key(account);
      await setBudget(gw.gateway.deps.store.db, "api_keys", key.id, 5_000_000, "none");
      const answers = await Promise.all(Array.from({ length: 100 }, () => ask(gw.baseURL, key.secret)));
      const { answered, spent } = await checkBudgetHeld(gw.gateway.deps.store.db, key.id, 5_000_000, answers);
      t.diagnostic(
        `answered ${answered} of 100, spent ${spent} of 5000000 nanodollars (minimum ${ASK_MINIMUM_NANOS})`,
      );
      assert.equal(gw.gateway.deps.ledger.openReservations(), 0);
    });

    it("a request that does not fit what consumption leaves is refused at once, saying what remains", async () => {
      const account = await gw.account(`spent-${store}`);
      const key = await gw.key(account, { limit: 100 });
      const first = await ask(gw.baseURL, key.secret);
      assert.equal(first.status, 200);
      const b = await books("key_id", key.id);
      const started = performance.now();
      const second = await ask(gw.baseURL, key.secret);
      assert.equal(second.status, 429);
      assert.equal(second.code, "key_limit_exceeded");
      assert.match(second.message!, new RegExp(`\\(${100 - b.used} tokens left\\)`));
      assert.ok(performance.now() - started < 4_000, "refused without waiting out ledger.wait_ms");
    });
  });
}
