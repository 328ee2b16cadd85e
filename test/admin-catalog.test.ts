// The catalog through the admin API (issue #30): providers, models and plans created,
// changed and deleted with the configuration file's fields, refused with the field named, each
// change audited without its secrets, a provider's test call and its upstream keys' states,
// the scopes; and the file-managed catalog read-only. Every answer is checked against the
// OpenAPI document the gateway serves.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import OpenAI from "openai";
import { catalogOperationsByKind, operations } from "../src/http/routes/admin/operations.ts";
import { type AdminApi, adminApiSuite, refused, suiteEnd } from "./support/admin-api.ts";
import { STORES } from "./support/console-api.ts";
import { TEST_MODEL } from "./support/gateway.ts";
import { storeSuite } from "./support/postgres.ts";

const POOL = ["sk-pool-key-aaaaaaaa-0001", "sk-pool-key-bbbbbbbb-0002"];

for (const store of STORES) {
  describe(`the catalog through the admin API (${store} store)`, await storeSuite(store), () => {
    const api: AdminApi = adminApiSuite(store, {
      config: { catalog: { source: "store" } },
      upstreamKeys: POOL,
    });
    const { call } = api;
    const client = () => new OpenAI({ apiKey: api.key.secret, baseURL: api.gw.baseURL, maxRetries: 0 });

    test("where the catalog is managed, and what it holds", async () => {
      const state = await call("GET", "/catalog");
      assert.equal(state.status, 200);
      assert.equal(state.body.source, "store");
      assert.ok(state.body.revision >= 1);
      const models = await call("GET", "/models");
      assert.deepEqual(
        models.body.data.map((m: { id: string }) => m.id),
        ["demo", TEST_MODEL],
      );
      const one = await call("GET", `/models/${TEST_MODEL}`);
      assert.equal(one.body.provider, "mock");
      const provider = await call("GET", "/providers/mock");
      assert.equal(provider.body.api_key_env, "MOCK_UPSTREAM_KEY");
      const changed = await call("PATCH", `/models/${TEST_MODEL}`, { body: { max_output_tokens: 128 } });
      assert.equal(changed.status, 200, changed.text);
      assert.equal(changed.body.max_output_tokens, 128);
      assert.equal(changed.body.provider, "mock", "the fields not given are kept");
      refused(await call("GET", "/plans/nope"), 404, "not_found");
    });

    test("a provider with a pool of stored keys, a model on it and a plan serve calls; its keys take turns", async () => {
      api.secrets.push(...POOL);
      const created = await call("POST", "/providers", {
        token: api.tokens.catalog,
        body: {
          id: "pooled",
          type: "openai-compatible",
          base_url: api.upstream.url,
          api_keys: POOL,
        },
      });
      assert.equal(created.status, 201, created.text);
      assert.deepEqual(created.body.api_keys, ["…0001", "…0002"]);
      assert.equal(
        (
          await call("POST", "/models", {
            body: {
              id: "pooled-model",
              provider: "pooled",
              upstream_model: "mock-model",
              pricing: { input: 1, output: 2 },
            },
          })
        ).status,
        201,
      );
      const plan = await call("POST", "/plans", {
        body: { id: "pro", quota_tokens: 1_000_000, models: ["pooled-model", TEST_MODEL] },
      });
      assert.equal(plan.status, 201, plan.text);
      assert.equal(plan.body.quota_tokens, 1_000_000);
      assert.equal((await call("PATCH", `/accounts/${api.acme}`, { body: { plan_id: "pro" } })).status, 200);
      api.upstream.reset();
      for (let i = 0; i < 4; i++)
        await client().chat.completions.create({
          model: "pooled-model",
          messages: [{ role: "user", content: "hi" }],
        });
      const used = api.upstream.requests.map((r) => r.headers.authorization);
      assert.deepEqual(used, POOL.flatMap((k) => [`Bearer ${k}`]).concat(POOL.map((k) => `Bearer ${k}`)));
      const keys = await call("GET", "/providers/pooled/keys");
      assert.equal(keys.status, 200);
      assert.deepEqual(
        keys.body.data.map((k: { hint: string; state: string; calls: number }) => [k.hint, k.state, k.calls]),
        [
          ["…0001", "ready", 2],
          ["…0002", "ready", 2],
        ],
      );
    });

    test("a change is checked as the file's: 400 names the field, 409 a taken id, nothing changes", async () => {
      refused(
        await call("PATCH", `/models/${TEST_MODEL}`, { body: { fallbacks: ["nowhere"] } }),
        400,
        "invalid_request",
        "fallbacks[0]",
      );
      refused(
        await call("POST", "/providers", {
          body: { id: "bad", type: "openai-compatible", base_url: "not a url" },
        }),
        400,
        "invalid_request",
        "base_url",
      );
      refused(
        await call("POST", "/providers", { body: { id: "mock", type: "demo" } }),
        409,
        "conflict",
        "id",
      );
      refused(await call("DELETE", "/models/pooled-model"), 400, "invalid_request", "plans[2].models[0]");
      refused(await call("PATCH", "/plans/pro", { body: { id: "renamed" } }), 400, "invalid_request", "id");
      refused(await call("DELETE", "/providers/absent"), 404, "not_found");
    });

    test("the scopes: keys and read tokens read the catalog but may not change it", async () => {
      for (const token of [api.tokens.keys, api.tokens.read])
        refused(
          await call("PATCH", "/plans/pro", { token, body: { quota_tokens: 5 } }),
          403,
          "admin_forbidden",
        );
      assert.equal((await call("GET", "/providers", { token: api.tokens.read })).status, 200);
    });

    test("a provider's test call says how it answered, or what went wrong", async () => {
      // a provider whose key is in the gateway's environment (api_key_env) is tested with it
      const fromEnv = await call("POST", "/providers/mock/test", { body: {} });
      assert.equal(fromEnv.body.ok, true, fromEnv.text);
      const ok = await call("POST", "/providers/pooled/test", { body: {} });
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.body.ok, true);
      assert.equal(ok.body.model, "mock-model");
      assert.ok(ok.body.latency_ms >= 0);
      await call("POST", "/providers", {
        body: {
          id: "locked",
          type: "openai-compatible",
          base_url: api.upstream.url,
          api_keys: ["sk-wrong-key-zzzzzzzz"],
        },
      });
      api.secrets.push("sk-wrong-key-zzzzzzzz");
      const bad = await call("POST", "/providers/locked/test", { body: { model: "mock-model" } });
      assert.equal(bad.body.ok, false);
      assert.equal(bad.body.status, 401);
      assert.ok(bad.body.error && !bad.body.error.includes("sk-wrong"));
      refused(await call("POST", "/providers/locked/test", { body: {} }), 400, "invalid_request", "model");
      assert.equal((await call("DELETE", "/providers/locked")).status, 204);
    });

    test("disable and enable a provider; delete what nothing names", async () => {
      assert.equal((await call("PATCH", "/providers/pooled", { body: { disabled: true } })).status, 200);
      const listed = await client().models.list();
      assert.ok(!listed.data.some((m) => m.id === "pooled-model"));
      assert.equal((await call("PATCH", "/providers/pooled", { body: { disabled: false } })).status, 200);
      assert.equal((await call("PATCH", "/plans/pro", { body: { models: [TEST_MODEL] } })).status, 200);
      assert.equal((await call("DELETE", "/models/pooled-model")).status, 204);
      refused(await call("GET", "/models/pooled-model"), 404, "not_found");
    });

    test("every change is in the audit log with its actor, and no secret anywhere in it", async () => {
      const audit = await call("GET", "/audit-log?resource=providers&limit=50");
      assert.equal(audit.status, 200);
      const created = audit.body.data.find(
        (e: { action: string; resource_id: string }) => e.action === "create" && e.resource_id === "pooled",
      );
      assert.equal(created.actor, `token:${api.tokenIds.catalog}`);
      assert.deepEqual(created.after.api_keys, ["…0001", "…0002"]);
      const disabled = audit.body.data.find(
        (e: { after: { disabled?: boolean } | null }) => e.after?.disabled === true,
      );
      assert.equal(disabled.before.disabled, undefined);
      const rows = await api.gw.gateway.deps.store.db.selectFrom("audit_log").selectAll().execute();
      const text = JSON.stringify(rows);
      for (const secret of POOL) assert.ok(!text.includes(secret));
    });

    suiteEnd(api, {
      operations: [
        operations.getCatalog.id,
        ...Object.values(catalogOperationsByKind.providers).map((o) => o.id),
        catalogOperationsByKind.models.list.id,
        catalogOperationsByKind.models.get.id,
        catalogOperationsByKind.models.create.id,
        catalogOperationsByKind.models.update.id,
        catalogOperationsByKind.models.remove.id,
        catalogOperationsByKind.plans.create.id,
        catalogOperationsByKind.plans.update.id,
      ],
    });
  });
}

describe("a file-managed catalog through the admin API", () => {
  const api: AdminApi = adminApiSuite("sqlite");
  test("reads the running catalog and refuses every change with 409 catalog_read_only", async () => {
    const state = await api.call("GET", "/catalog");
    assert.deepEqual(state.body, { source: "file", revision: null });
    assert.equal((await api.call("GET", "/providers")).body.data.length, 2);
    refused(
      await api.call("POST", "/plans", { body: { id: "x", quota_tokens: 1 } }),
      409,
      "catalog_read_only",
    );
    refused(
      await api.call("PATCH", "/plans/default", { body: { quota_tokens: 1 } }),
      409,
      "catalog_read_only",
    );
    refused(await api.call("DELETE", "/models/demo"), 409, "catalog_read_only");
  });
});
