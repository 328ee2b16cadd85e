import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { test } from "node:test";
import { rateAt } from "./pricing.ts";
import { tableLoaded, tablePricing } from "./table.ts";

test("the table prices a known model with its cache and long-context tiers", () => {
  const sonnet = tablePricing("anthropic", "claude-sonnet-4-5");
  assert.ok(sonnet);
  assert.equal(sonnet.source, "table");
  assert.equal(rateAt(sonnet.input, 1_000), 3);
  assert.equal(rateAt(sonnet.output, 1_000), 15);
  assert.equal(rateAt(sonnet.cachedInput, 1_000), 0.3);
  assert.equal(rateAt(sonnet.cacheWrite, 1_000), 3.75);
  // past 200k prompt tokens the whole call is billed at the higher rates, as Anthropic lists them
  assert.equal(rateAt(sonnet.input, 200_001), 6);
  assert.equal(rateAt(sonnet.output, 200_001), 22.5);
});

test("a flat-priced model has no tiers; cache writes it does not list cost 0", () => {
  const mini = tablePricing("openai", "gpt-4o-mini");
  assert.ok(mini);
  assert.deepEqual(mini.input, { base: 0.15, tiers: [] });
  assert.deepEqual(mini.cachedInput, { base: 0.075, tiers: [] });
  assert.deepEqual(mini.cacheWrite, { base: 0, tiers: [] });
});

test("names the table does not know, at a provider or anywhere, are not priced", () => {
  assert.equal(tablePricing("openai", "our-own-finetune-7b"), undefined);
  assert.equal(tablePricing("no-such-provider", "gpt-4o"), undefined);
});

test("the table is dropped once a build's lookups are done, and loaded again by the next", async () => {
  assert.ok(tablePricing("openai", "gpt-4o-mini"));
  assert.equal(tableLoaded(), true, "kept for the rest of this turn: a build prices its models in one go");
  assert.ok(tablePricing("anthropic", "claude-sonnet-4-5"));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(tableLoaded(), false);
  const cached = Object.keys(createRequire(import.meta.url).cache).filter((f) => f.includes("genai-prices"));
  assert.deepEqual(cached, [], "nor in require's cache, which would keep it");
  assert.deepEqual(tablePricing("openai", "gpt-4o-mini")?.input, { base: 0.15, tiers: [] });
});
