// Issue #18: a key's money budget holds across two gateway processes on one PostgreSQL store
// (and one Redis) as it does on one: 100 concurrent calls on a key whose budget pays for about
// ten, spread over both instances, never spend more than the budget; the records' costs add up
// to what the store (and the ledger's shared state) say was spent; and a call is refused with
// 429 budget_exceeded only once what the budget leaves cannot cover the call's minimum (its
// prompt bound and 16 output tokens at the model's prices), never while room for it remains.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setBudget } from "../../src/accounts/budgets.ts";
import { ASK_MINIMUM_NANOS, checkBudgetHeld } from "../support/budget-books.ts";
import { ask } from "../support/chat-call.ts";
import { type Cluster, startCluster } from "../support/cluster.ts";
import { pricedModels } from "../support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "../support/mock-openai-upstream.ts";
import { needsRedis } from "../support/redis-instance.ts";
import { until } from "../support/stream-assertions.ts";

/** $0.005: about ten of ask()'s calls at $3 / $15 per million tokens */
const BUDGET = 5_000_000;
const CALLS = 100;

for (const mode of ["postgres", "postgres+redis"] as const) {
  const redis = mode === "postgres+redis";
  describe(`two instances (${mode}): a key's money budget`, await (redis ? needsRedis() : {}), () => {
    let upstream: MockUpstream;
    let cluster: Cluster;
    before(async () => {
      upstream = await startMockUpstream({ promptCount: "template", latencyMs: 100 });
      cluster = await startCluster({
        instances: 2,
        upstream,
        redis,
        config: { models: pricedModels(upstream) },
      });
    });
    after(async () => {
      await cluster?.close();
      await upstream?.close();
    });

    it(`${CALLS} concurrent calls on a key with a small budget: never overspent, no false refusal`, async (t) => {
      const account = await cluster.target.account("budget");
      const key = await cluster.target.key(account);
      await setBudget(cluster.store.db, "api_keys", key.id, BUDGET, "none");
      const urls = cluster.instances.map((i) => i.baseURL);
      const answers = await Promise.all(
        Array.from({ length: CALLS }, (_, i) => ask(urls[i % 2]!, key.secret)),
      );
      await cluster.target.books.flush(); // the records are committed behind the answers
      const { answered, spent } = await checkBudgetHeld(cluster.store.db, key.id, BUDGET, answers);
      t.diagnostic(
        `answered ${answered} of ${CALLS} over 2 instances, spent ${spent} of ${BUDGET} nanodollars (minimum ${ASK_MINIMUM_NANOS})`,
      );
      const shared = (await cluster.money("key", key.id))!;
      assert.equal(shared.spent.total, spent, "the ledger's shared state agrees with the store");
      assert.equal(shared.reserved, 0, "nothing held any more");
      // the last closed holds' rows go with a commit, or alone once none came for a second
      await until(async () => (await cluster.holds(key.id)).count === 0, "no hold's row is left", 5_000);
    });
  });
}
