import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Usage } from "../domain/completion.ts";
import { costOf, costRule, flatRate, type Pricing, rateAt, UNPRICED } from "./pricing.ts";
import { usd } from "./usd.ts";

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

describe("costRule", () => {
  const bound = (prompt: number, output: number, pricing: Pricing, multiplier = 1) => {
    const rule = costRule(prompt, pricing, multiplier);
    return rule.fixed + Math.ceil(output * rule.perToken);
  };

  test("covers any split of the prompt into fresh, cached and written tokens, at any multiplier", () => {
    for (const multiplier of [1, 0.8, 1 / 3])
      for (const [cachedInput, cacheWrite] of [
        [0, 0],
        [10_000, 0],
        [0, 10_000],
        [3_000, 7_000],
        [3_333, 3_333],
      ]) {
        const cost = costOf(
          usage({ prompt: 10_000, cachedInput, cacheWrite, completion: 499 }),
          sonnet,
          multiplier,
        );
        assert.ok(
          cost.total <= bound(10_000, 499, sonnet, multiplier),
          `${cachedInput}/${cacheWrite} ×${multiplier}`,
        );
      }
    // the dearest input (cache writes at $3.75) for the prompt, output at $15, and the rounding allowance
    assert.equal(bound(10_000, 500, sonnet), 10_000 * 3.75 * 1_000 + 3 + 500 * 15 * 1_000);
  });

  test("at the tier the prompt bound reaches", () => {
    assert.deepEqual(costRule(250_000, sonnet), { fixed: 250_000 * 7.5 * 1_000 + 3, perToken: 22.5 * 1_000 });
  });

  test("a free model holds nothing", () => {
    assert.deepEqual(costRule(10_000, UNPRICED), { fixed: 0, perToken: 0 });
  });
});
