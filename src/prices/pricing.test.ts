import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Usage } from "../providers/types.ts";
import { costBound, costOf, flatRate, type Pricing, rateAt, UNPRICED, usd } from "./pricing.ts";

const usage = (u: Partial<Usage>): Usage => ({
  prompt: 0,
  completion: 0,
  cachedInput: 0,
  cacheWrite: 0,
  reasoning: 0,
  ...u,
});

// Claude Sonnet 4.5 as Anthropic lists it: $3 / $15 per Mtok, cache reads $0.30, writes $3.75;
// past 200k prompt tokens $6 / $22.50, $0.60, $7.50.
const sonnet: Pricing = {
  source: "table",
  input: { base: 3, tiers: [{ start: 200_000, price: 6 }] },
  output: { base: 15, tiers: [{ start: 200_000, price: 22.5 }] },
  cachedInput: { base: 0.3, tiers: [{ start: 200_000, price: 0.6 }] },
  cacheWrite: { base: 3.75, tiers: [{ start: 200_000, price: 7.5 }] },
};

describe("costOf", () => {
  test("each token kind at its own price, by hand", () => {
    // 10,000 prompt tokens of which 2,000 cache reads and 1,000 cache writes; 500 output
    const cost = costOf(
      usage({ prompt: 10_000, cachedInput: 2_000, cacheWrite: 1_000, completion: 500 }),
      sonnet,
    );
    assert.equal(cost.input, 7_000 * 3 * 1_000); // $0.021
    assert.equal(cost.cachedInput, 2_000 * 0.3 * 1_000); // $0.0006
    assert.equal(cost.cacheWrite, 1_000 * 3.75 * 1_000); // $0.00375
    assert.equal(cost.output, 500 * 15 * 1_000); // $0.0075
    assert.equal(usd(cost.total), 0.03285);
  });

  test("reasoning tokens are output tokens (Gemini thinking, o-series)", () => {
    const flash: Pricing = { ...UNPRICED, source: "config", input: flatRate(0.3), output: flatRate(2.5) };
    const cost = costOf(usage({ prompt: 1_000, completion: 1_200, reasoning: 1_000 }), flash);
    assert.equal(cost.output, 1_200 * 2.5 * 1_000);
  });

  test("past a tier's start the whole call is billed at the tier's prices", () => {
    assert.equal(rateAt(sonnet.input, 200_000), 3);
    assert.equal(rateAt(sonnet.input, 200_001), 6);
    const cost = costOf(usage({ prompt: 300_000, completion: 1_000 }), sonnet);
    assert.equal(usd(cost.input), 1.8);
    assert.equal(usd(cost.output), 0.0225);
  });

  test("the plan's multiplier, and integers however fractional the prices", () => {
    const cost = costOf(usage({ prompt: 7, completion: 3 }), sonnet, 0.8);
    for (const part of Object.values(cost)) assert.ok(Number.isInteger(part));
    assert.equal(cost.input, Math.round(7 * 3 * 0.8 * 1_000));
  });

  test("unpriced models cost nothing", () => {
    assert.equal(costOf(usage({ prompt: 1e6, completion: 1e6 }), UNPRICED).total, 0);
  });
});

describe("costBound", () => {
  test("covers any split of the prompt into fresh, cached and written tokens", () => {
    const bound = costBound(10_000, 500, sonnet);
    for (const [cachedInput, cacheWrite] of [
      [0, 0],
      [10_000, 0],
      [0, 10_000],
      [3_000, 7_000],
    ])
      assert.ok(
        costOf(usage({ prompt: 10_000, cachedInput, cacheWrite, completion: 500 }), sonnet).total <= bound,
      );
    assert.equal(
      bound,
      10_000 * 3.75 * 1_000 + 500 * 15 * 1_000,
      "the cache-write price is the dearest input",
    );
  });

  test("at the tier the prompt bound reaches", () => {
    assert.equal(costBound(250_000, 0, sonnet), 250_000 * 7.5 * 1_000);
  });
});
