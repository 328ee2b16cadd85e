import assert from "node:assert/strict";
import { test } from "node:test";
import { configSchema } from "./cross-check.ts";
import { deepFreeze } from "./load.ts";
import { planReload } from "./reload.ts";
import type { Config, ConfigInput } from "./schema.ts";

const BASE: ConfigInput = {
  server: { port: 8080, shutdown_grace_ms: 30_000 },
  store: { database_url: "postgres://gw:s3cret@db:5432/gw", redis_url: "redis://:s3cret@redis:6379" },
  providers: [
    { id: "demo", type: "demo" },
    {
      id: "up",
      type: "openai-compatible",
      base_url: "https://up.example/v1",
      headers: { "x-token": "t0ken" },
    },
  ],
  models: [
    { id: "a", provider: "demo" },
    { id: "b", provider: "up" },
  ],
  plans: [{ id: "default", quota_tokens: 1000, models: ["a", "b"] }],
};

const parse = (input: ConfigInput): Config => deepFreeze(configSchema.parse(input));

test("what needs a restart keeps its running value, and is named by path, never by value", () => {
  const running = parse(BASE);
  const next = parse({
    ...BASE,
    server: { port: 9090, shutdown_grace_ms: 30_000, cors_origins: ["https://app.example"] },
    store: { ...BASE.store, redis_url: "redis://:other-s3cret@redis2:6379" },
    routing: { cooldown: { seconds: 5 }, retry_on: [500] },
  });
  const plan = planReload(running, next);
  assert.deepEqual(plan.needRestart.sort(), [
    "routing.cooldown.seconds",
    "server.cors_origins",
    "server.port",
    "store.redis_url",
  ]);
  assert.equal(plan.config.server, running.server);
  assert.equal(plan.config.store, running.store);
  assert.equal(plan.config.routing.cooldown, running.routing.cooldown);
  assert.deepEqual(plan.config.routing.retry_on, [500], "the rest of routing is the file's");
  assert.deepEqual(plan.changes.settings, ["routing.retry_on"]);
  assert.ok(Object.isFrozen(plan.config) && Object.isFrozen(plan.config.routing), "frozen as the loader's");
  assert.ok(!JSON.stringify([plan.needRestart, plan.changes]).includes("s3cret"));
});

test("providers, models and plans changed are named by id: added, removed, changed", () => {
  const running = parse(BASE);
  const next = parse({
    ...BASE,
    providers: [
      { id: "demo", type: "demo" },
      {
        id: "up",
        type: "openai-compatible",
        base_url: "https://up.example/v1",
        headers: { "x-token": "n3w" },
      },
    ],
    models: [
      { id: "b", provider: "up", pricing: { input: 1 } },
      { id: "c", provider: "demo" },
    ],
    plans: [
      { id: "default", quota_tokens: 1000, models: ["b", "c"] },
      { id: "pro", quota_tokens: 5000, models: ["b"] },
    ],
    safety: { withheld_limit: { max: 3 } },
    log_level: "warn",
  });
  const { changes, needRestart, config } = planReload(running, next);
  assert.deepEqual(needRestart, []);
  assert.deepEqual(changes.providers, { added: [], removed: [], changed: ["up"] });
  assert.deepEqual(changes.models, { added: ["c"], removed: ["a"], changed: ["b"] });
  assert.deepEqual(changes.plans, { added: ["pro"], removed: [], changed: ["default"] });
  assert.deepEqual(changes.settings.sort(), ["log_level", "safety.withheld_limit.max"]);
  assert.deepEqual(
    config.models.map((m) => m.id),
    ["b", "c"],
  );
  assert.ok(!JSON.stringify(changes).includes("n3w"), "no header value");
});

test("the same file again changes nothing", () => {
  const plan = planReload(parse(BASE), parse(BASE));
  assert.deepEqual(plan.needRestart, []);
  assert.deepEqual(plan.changes, {
    providers: { added: [], removed: [], changed: [] },
    models: { added: [], removed: [], changed: [] },
    plans: { added: [], removed: [], changed: [] },
    settings: [],
  });
});
