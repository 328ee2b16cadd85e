// Issue #31, item 3, across three gateway processes on one PostgreSQL store (and Redis): a
// key's per-session cap holds however the calls of one session are spread over instances.
// 30 calls of one session at once, ten on each instance, against a cap that fits 5 holds: 5
// answered, the session's use within its cap and equal to its records, in the store's row too.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { updateKey } from "../../src/accounts/keys.ts";
import { parseChatRequest } from "../../src/domain/chat-request.ts";
import { DEFAULT_PROMPT_OVERHEADS, promptUpperBound } from "../../src/providers/prompt-bound.ts";
import { type Cluster, startCluster } from "../support/cluster.ts";
import { TEST_MODEL } from "../support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "../support/mock-openai-upstream.ts";
import { needsRedis } from "../support/redis-instance.ts";

const MAX_TOKENS = 20;
/** answered only once every call was decided: a call that settles early would free room */
const messages = [
  { role: "user" as const, content: `a session's turn mock:tokens=${MAX_TOKENS} mock:latency=2000` },
];
const HOLD =
  promptUpperBound(
    parseChatRequest({ model: TEST_MODEL, messages, max_tokens: MAX_TOKENS }),
    DEFAULT_PROMPT_OVERHEADS,
  ) + MAX_TOKENS;

async function turn(baseURL: string, secret: string, session: string) {
  const res = await fetch(`${baseURL}/chat/completions`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${secret}`,
      "content-type": "application/json",
      "x-session-id": session,
    },
    body: JSON.stringify({ model: TEST_MODEL, messages, max_tokens: MAX_TOKENS }),
  });
  const body = (await res.json()) as { error?: { code: string } };
  return { status: res.status, code: body.error?.code };
}

for (const mode of ["postgres+redis", "postgres"] as const) {
  const redis = mode === "postgres+redis";
  describe(`three instances (${mode}): a session's cap shared`, await (redis ? needsRedis() : {}), () => {
    let upstream: MockUpstream;
    let cluster: Cluster;
    before(async () => {
      upstream = await startMockUpstream();
      // refused at once rather than waiting: what is tested is that the hold is atomic
      cluster = await startCluster({ instances: 3, upstream, redis, config: { ledger: { wait_ms: 0 } } });
    });
    after(async () => {
      await cluster?.close();
      await upstream?.close();
    });

    it("30 calls of one session over three instances, a cap that fits 5: 5 answered, never beyond it", async (t) => {
      const account = await cluster.target.account(`sessions-${mode}`);
      const key = await cluster.target.key(account);
      await updateKey(cluster.store.db, key.id, { session_limit_tokens: HOLD * 5 });
      const urls = cluster.instances.map((i) => i.baseURL);
      const started = performance.now();
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, i) => turn(urls[i % 3]!, key.secret, "fleet")),
      );
      const ms = Math.round(performance.now() - started);
      const ok = results.filter((r) => r.status === 200).length;
      assert.equal(ok, 5);
      assert.equal(upstream.requests.length, 5, "nothing else reached the upstream");
      assert.ok(results.every((r) => r.status === 200 || r.code === "tokens_held"));
      await cluster.target.books.flush(); // the records are committed behind the answers
      const records = await cluster.store.db
        .selectFrom("call_records")
        .select((eb) => [
          eb.fn.sum<number>("total_tokens").as("tokens"),
          eb.fn.countAll<number>().as("calls"),
        ])
        .where("key_id", "=", key.id)
        .where("session_id", "=", "fleet")
        .executeTakeFirstOrThrow();
      const row = await cluster.store.db
        .selectFrom("session_usage")
        .selectAll()
        .where("key_id", "=", key.id)
        .where("session_id", "=", "fleet")
        .executeTakeFirstOrThrow();
      assert.equal(Number(records.calls), 30);
      assert.equal(
        Number(row.used_tokens),
        Number(records.tokens),
        "the session's row adds up to its records",
      );
      assert.ok(Number(row.used_tokens) <= HOLD * 5);
      assert.equal(Number(row.reserved_tokens), 0);
      t.diagnostic(
        `${mode}, 3 instances, token cap ${HOLD * 5} (5 holds of ${HOLD}): 30 at once -> ${ok} answered, ` +
          `${30 - ok} tokens_held; used ${row.used_tokens}; ${ms} ms`,
      );
      // a second session of the key, on any instance, is not held back
      assert.equal((await turn(urls[1]!, key.secret, "fleet-2")).status, 200);
    });
  });
}
