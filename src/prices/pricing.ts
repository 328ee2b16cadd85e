// What a model's tokens cost, and the cost of one call. Money is kept as integer nanodollars
// (1e-9 USD): each call's cost is rounded once, per token kind, so the sum of the records'
// costs equals any counter built from them exactly. A counter stays exact up to 9e15 nano$
// ($9 million), where doubles stop holding every integer.
import type { PricingConfig } from "../config/schema.ts";
import type { Usage } from "../domain/completion.ts";

/** USD per million tokens, with an optional higher rate once the prompt passes a length. */
export interface Rate {
  base: number;
  /** ascending `start` (prompt tokens): past a start, the whole call is billed at its price */
  tiers: readonly { start: number; price: number }[];
}

export type PriceSource = "config" | "table" | "unpriced";

export interface Pricing {
  source: PriceSource;
  input: Rate;
  output: Rate;
  /** cache reads (OpenAI cached_tokens, Anthropic cache_read_input_tokens, Gemini cachedContentTokenCount) */
  cachedInput: Rate;
  /** cache writes (Anthropic cache_creation_input_tokens) */
  cacheWrite: Rate;
}

const ZERO: Rate = { base: 0, tiers: [] };
export const UNPRICED: Pricing = {
  source: "unpriced",
  input: ZERO,
  output: ZERO,
  cachedInput: ZERO,
  cacheWrite: ZERO,
};

export function flatRate(usdPerMillion: number | undefined): Rate {
  return usdPerMillion ? { base: usdPerMillion, tiers: [] } : ZERO;
}

/** A model's `pricing` from the configuration. */
export function configuredPricing(p: PricingConfig): Pricing {
  return {
    source: "config",
    input: flatRate(p.input),
    output: flatRate(p.output),
    cachedInput: flatRate(p.cached_input),
    cacheWrite: flatRate(p.cache_write),
  };
}

/** The rate for a call whose prompt has `promptTokens` tokens (tiers as the price source states them). */
export function rateAt(rate: Rate, promptTokens: number): number {
  let price = rate.base;
  for (const tier of rate.tiers) if (promptTokens > tier.start) price = tier.price;
  return price;
}

export interface Cost {
  /** nanodollars, the sum of the parts */
  total: number;
  input: number;
  cachedInput: number;
  cacheWrite: number;
  output: number;
}

/** `tokens` at `usdPerMillion`, in nanodollars: tokens × $/Mtok × 1e-6 × 1e9. */
function nano(tokens: number, usdPerMillion: number, multiplier: number): number {
  return tokens && usdPerMillion ? Math.round(tokens * usdPerMillion * multiplier * 1_000) : 0;
}

/**
 * The cost of a call from the token kinds the upstream reported: fresh input (prompt less
 * cache reads and writes), cache reads, cache writes, output (reasoning included) — each at
 * the model's rate for this prompt length — times the plan's multiplier.
 */
export function costOf(usage: Usage, pricing: Pricing, multiplier = 1): Cost {
  const fresh = Math.max(0, usage.prompt - usage.cachedInput - usage.cacheWrite);
  const at = (rate: Rate) => rateAt(rate, usage.prompt);
  const cost = {
    input: nano(fresh, at(pricing.input), multiplier),
    cachedInput: nano(usage.cachedInput, at(pricing.cachedInput), multiplier),
    cacheWrite: nano(usage.cacheWrite, at(pricing.cacheWrite), multiplier),
    output: nano(usage.completion, at(pricing.output), multiplier),
  };
  return { total: cost.input + cost.cachedInput + cost.cacheWrite + cost.output, ...cost };
}

/**
 * The most a call can cost, as a rule the ledger can size a hold with: `fixed` for the prompt bound at
 * the dearest input price (plus a nanodollar for each of the cost's rounded parts but one),
 * `perToken` for each output token at the output price (the rate at the prompt bound's tier:
 * tiers rise with the prompt, so no smaller prompt pays more).
 */
export function costRule(
  promptBound: number,
  pricing: Pricing,
  multiplier = 1,
): { fixed: number; perToken: number } {
  const input = Math.max(
    rateAt(pricing.input, promptBound),
    rateAt(pricing.cachedInput, promptBound),
    rateAt(pricing.cacheWrite, promptBound),
  );
  const fixed = Math.ceil(promptBound * input * multiplier * 1_000);
  return { fixed: fixed ? fixed + 3 : 0, perToken: rateAt(pricing.output, promptBound) * multiplier * 1_000 };
}
