// Issue #9, item 4, across three gateway processes on one PostgreSQL store: rate limits are
// shared through Redis (a key limited to 6 requests a minute gets 6 answers in that minute,
// not 6 per instance) and per instance without it (with a warning at start); no false refusals
// when the calls holding a key's tokens are on other instances; `keys show` and `accounts show`
// report what every instance holds; a key disabled by the CLI is refused by every instance
// within a second.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ask, chat } from "../support/chat-call.ts";
import { runCli } from "../support/cli.ts";
import { type Cluster, startCluster } from "../support/cluster.ts";
import { TEST_MODEL, testConfig } from "../support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "../support/mock-openai-upstream.ts";
import { needsRedis } from "../support/redis-instance.ts";
import { until } from "../support/stream-assertions.ts";

const plans = [
  {
    id: "default",
    quota_tokens: 1_000_000_000,
    models: [TEST_MODEL],
    rate_limits: { key: { rpm: 6 } },
  },
];

for (const mode of ["postgres+redis", "postgres"] as const) {
  const redis = mode === "postgres+redis";
  describe(`three instances (${mode}): limits shared`, await (redis ? needsRedis() : {}), () => {
    let upstream: MockUpstream;
    let cluster: Cluster;
    let cliDir: string;
    before(async () => {
      upstream = await startMockUpstream({ promptCount: "template", latencyMs: 100 });
      // Calls that hang upstream hold their tokens until the test lets go, not until a
      // first-byte timeout that a starved machine's CLI runs could outlast.
      const providers = testConfig(upstream).providers.map((p) =>
        p.type === "openai-compatible"
          ? {
              ...p,
              timeouts: { connect_ms: 2_000, first_byte_ms: 60_000, idle_ms: 60_000, total_ms: 120_000 },
            }
          : p,
      );
      cluster = await startCluster({ instances: 3, upstream, redis, config: { plans, providers } });
      cliDir = mkdtempSync(join(tmpdir(), "gw-cluster-cli-"));
    });
    after(async () => {
      await cluster?.close();
      await upstream?.close();
      rmSync(cliDir, { recursive: true, force: true });
    });

    const cli = (args: string[]) =>
      runCli([...args, "--json"], { GATEWAY_CONFIG: cluster.configFile }, { cwd: cliDir });

    if (redis)
      it("a key limited to 6 requests a minute gets 6 answers across all instances", async () => {
        const account = await cluster.target.account("rpm6");
        const key = await cluster.target.key(account);
        const urls = cluster.instances.map((i) => i.baseURL);
        const answers = await Promise.all(
          Array.from({ length: 12 }, (_, i) => chat(urls[i % 3]!, key.secret)),
        );
        assert.equal(answers.filter((a) => a.status === 200).length, 6);
        const refused = answers.filter((a) => a.status === 429);
        assert.equal(refused.length, 6);
        for (const r of refused) assert.equal(r.code, "rate_limit_exceeded");
      });
    else {
      it("without Redis, each instance keeps its own rate limits, and says so at start", async () => {
        const warned = cluster.instances.filter((i) =>
          i.logs.some((l) => l.includes("each keeps its own rate-limit buckets")),
        );
        assert.ok(warned.length >= 1, "an instance that saw another live one warned");
        const account = await cluster.target.account("rpm6-local");
        const key = await cluster.target.key(account);
        const urls = cluster.instances.map((i) => i.baseURL);
        const answers = await Promise.all(
          Array.from({ length: 21 }, (_, i) => chat(urls[i % 3]!, key.secret)),
        );
        // 7 a piece: each instance answers its own 6
        assert.equal(answers.filter((a) => a.status === 200).length, 18);
      });
    }

    it("no false refusals: 100 requests on a 400-token key, over all instances", async (t) => {
      const account = await cluster.target.account("key400");
      const key = await cluster.target.key(account, { limit: 400 });
      // the plan's rpm is 6 a key: this key's own rate limits are lifted for the test
      await cluster.store.db
        .updateTable("api_keys")
        .set({ rpm_limit: 100_000 })
        .where("id", "=", key.id)
        .execute();
      const urls = cluster.instances.map((i) => i.baseURL);
      const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => ask(urls[i % 3]!, key.secret)));
      const rows = await cluster.store.db
        .selectFrom("call_records")
        .select(["total_tokens", "status"])
        .where("key_id", "=", key.id)
        .execute();
      const stored = await cluster.store.db
        .selectFrom("api_keys")
        .select("used_tokens")
        .where("id", "=", key.id)
        .executeTakeFirstOrThrow();
      const perCall = Math.max(...rows.filter((r) => r.status === "ok").map((r) => Number(r.total_tokens)));
      const ok = answers.filter((a) => a.status === 200).length;
      t.diagnostic(
        `answered ${ok} of 100 over 3 instances, ${perCall} tokens a call, used ${stored.used_tokens} of 400`,
      );
      assert.ok(Number(stored.used_tokens) <= 400);
      assert.equal(
        rows.reduce((sum, r) => sum + Number(r.total_tokens), 0),
        Number(stored.used_tokens),
      );
      assert.ok(ok >= Math.floor(400 / perCall) - 1, `${ok} answered`);
      for (const a of answers.filter((x) => x.status !== 200)) assert.notEqual(a.code, "tokens_held");
    });

    it("keys show and accounts show report what calls on every instance hold", async () => {
      const account = await cluster.target.account("held");
      const key = await cluster.target.key(account, { limit: 100_000 });
      await cluster.store.db
        .updateTable("api_keys")
        .set({ rpm_limit: 100_000 })
        .where("id", "=", key.id)
        .execute();
      // two calls that hang upstream, on two instances, each holding its reservation
      const controllers = [new AbortController(), new AbortController()];
      const hanging = controllers.map((c, i) =>
        fetch(`${cluster.instances[i]!.baseURL}/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
          body: JSON.stringify({
            model: TEST_MODEL,
            max_tokens: 100,
            messages: [{ role: "user", content: "mock:hang" }],
          }),
          signal: c.signal,
        }).catch(() => undefined),
      );
      try {
        // Each instance publishes what it holds every second: the CLI must show both holds.
        let shown: any;
        let acct: any;
        let held = 0;
        await until(
          async () => {
            const holds = await cluster.holds(key.id);
            held = holds.tokens;
            shown = (await cli(["keys", "show", key.id])).json;
            acct = (await cli(["accounts", "show", account])).json;
            return holds.count === 2 && shown?.reserved_tokens === held && acct?.reserved_tokens === held;
          },
          "both holds show",
          20_000,
        );
        assert.ok(held > 0);
        assert.equal(shown.reserved_tokens, held, "both instances' holds");
        assert.equal(shown.remaining_tokens, 100_000 - shown.used_tokens - held);
        assert.equal(acct.reserved_tokens, held);
      } finally {
        for (const c of controllers) c.abort();
        await Promise.all(hanging);
      }
    });

    it("a key disabled by the CLI is refused by every instance", async (t) => {
      const account = await cluster.target.account("revoked");
      const key = await cluster.target.key(account);
      for (const i of cluster.instances) assert.equal((await chat(i.baseURL, key.secret)).status, 200);
      const disabled = await cli(["keys", "disable", key.id]);
      assert.equal(disabled.code, 0, disabled.stderr);
      const started = performance.now();
      const refusedAt: number[] = [];
      for (const i of cluster.instances) {
        await until(
          async () => (await chat(i.baseURL, key.secret)).code === "key_disabled",
          "the key is refused",
          5_000,
        );
        refusedAt.push(Math.round(performance.now() - started));
      }
      t.diagnostic(`refused by each instance after ${refusedAt.join(", ")} ms`);
    });
  });
}
