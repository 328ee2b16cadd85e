// The catalog changed on one instance and used on another (issue #30): two gateway processes
// on one PostgreSQL store (and Redis), the catalog in the store. A provider with a stored
// upstream key, a model and a plan change made through one instance's admin API are served
// by the other within two seconds; a price change is charged there from its next call.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import { createAccount } from "../../src/accounts/accounts.ts";
import { createAdminToken } from "../../src/accounts/admin-tokens.ts";
import { createKey } from "../../src/accounts/keys.ts";
import { type Cluster, startCluster } from "../support/cluster.ts";
import { TEST_SECRET_KEY } from "../support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "../support/mock-openai-upstream.ts";
import { needsRedis } from "../support/redis-instance.ts";

const STORED_KEY = "sk-stored-in-the-catalog-0042";

for (const redis of [false, true])
  describe(
    `a catalog change on one instance, used on another (${redis ? "postgres+redis" : "postgres"})`,
    await (redis ? needsRedis() : {}),
    () => {
      let upstream: MockUpstream;
      let cluster: Cluster;
      let token: string;
      let client: OpenAI;

      before(async () => {
        upstream = await startMockUpstream({ apiKey: ["sk-upstream-secret-123", STORED_KEY] });
        cluster = await startCluster({
          instances: 2,
          upstream,
          redis,
          config: { catalog: { source: "store" } },
          env: { GATEWAY_SECRET_KEY: TEST_SECRET_KEY, MOCK_UPSTREAM_KEY: "sk-upstream-secret-123" },
        });
        const db = cluster.store.db;
        token = (await createAdminToken(db, { name: "cluster", scopes: ["catalog"] }, "test")).secret;
        const account = await createAccount(db, { name: "catalog-user", plan_id: "default" });
        const { secret } = await createKey(db, { account_id: account.id, name: "k" });
        client = new OpenAI({ apiKey: secret, baseURL: cluster.instances[1]!.baseURL, maxRetries: 0 });
      });
      after(async () => {
        await cluster?.close();
        await upstream?.close();
      });

      const admin = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`${cluster.instances[0]!.origin}/admin/v1${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${await res.clone().text()}`);
        return res.json() as Promise<any>;
      };

      it("a provider, model and plan change made on the first is served by the second within two seconds", async (t) => {
        await admin("POST", "/providers", {
          id: "stored",
          type: "openai-compatible",
          base_url: upstream.url,
          api_keys: [STORED_KEY],
        });
        await admin("POST", "/models", {
          id: "gpt-stored",
          provider: "stored",
          upstream_model: "stored-model",
          pricing: { input: 1, output: 1 },
        });
        const plan = await admin("GET", "/plans/default");
        const changed = Date.now();
        await admin("PATCH", "/plans/default", { models: [...plan.models, "gpt-stored"] });
        let served = false;
        while (!served && Date.now() - changed < 2_000) {
          served = (await client.models.list()).data.some((m) => m.id === "gpt-stored");
          if (!served) await new Promise((r) => setTimeout(r, 20));
        }
        assert.ok(served, "the second instance lists the new model within two seconds");
        t.diagnostic(`the change reached the other instance in ${Date.now() - changed} ms`);
        upstream.reset();
        const answer = await client.chat.completions.create({
          model: "gpt-stored",
          messages: [{ role: "user", content: "hi" }],
        });
        assert.equal(answer.model, "gpt-stored");
        assert.equal(upstream.requests[0]!.headers.authorization, `Bearer ${STORED_KEY}`);
        assert.equal(upstream.requests[0]!.body.model, "stored-model");
      });

      it("a price changed on the first is charged on the second from its next call", async () => {
        const call = async () => {
          const { response } = await client.chat.completions
            .create({ model: "gpt-stored", messages: [{ role: "user", content: "hi mock:tokens=5" }] })
            .withResponse();
          const id = response.headers.get("x-request-id")!;
          for (let i = 0; i < 100; i++) {
            const row = await cluster.store.db
              .selectFrom("call_records")
              .select(["cost_nanos", "total_tokens"])
              .where("request_id", "=", id)
              .executeTakeFirst();
            if (row) return { cost: Number(row.cost_nanos), tokens: Number(row.total_tokens) };
            await new Promise((r) => setTimeout(r, 50));
          }
          throw new Error(`no record of ${id}`);
        };
        const cheap = await call();
        const revision = (await admin("GET", "/catalog")).revision;
        await admin("PATCH", "/models/gpt-stored", { pricing: { input: 100, output: 100 } });
        // the second instance has applied the change once it lists what the first wrote since
        const appliedBy = Date.now() + 2_000;
        let dear = await call();
        while (dear.cost === cheap.cost && Date.now() < appliedBy) dear = await call();
        assert.ok(revision >= 1);
        assert.equal(dear.tokens, cheap.tokens);
        assert.equal(dear.cost, cheap.cost * 100);
      });

      it("neither instance logged the stored upstream key", () => {
        for (const instance of cluster.instances) assert.ok(!instance.logs.join("").includes(STORED_KEY));
      });
    },
  );
