// What one call reserves: the prompt bound the provider states under the model's overheads
// (an upper bound of what the upstream can count, not an estimate), plus the output bound per
// choice. The ledger may hold less than wanted (down to the minimum); the output bound sent
// upstream is then cut to what was held, so no upstream can produce more than was reserved.
import type { ChatRequest } from "../domain/chat-request.ts";
import type { EmbeddingRequest } from "../domain/embedding-request.ts";
import type { CostRule } from "../ledger/types.ts";
import type { ResolvedModel } from "../models/registry.ts";
import { costRule } from "../prices/pricing.ts";
import type { NativeRequest } from "../providers/types.ts";
import {
  candidateEmbeddingBound,
  candidatePromptBound,
  candidates,
  largestOutputBound,
} from "../routing/candidates.ts";

/** the smallest answer worth sending upstream; below it the request is refused */
export const MIN_OUTPUT_TOKENS = 16;

export interface Budget {
  promptBound: number;
  /** the model's per-request overhead the prompt bound was computed with (it grows on overruns) */
  perRequestOverhead: number;
  /** output tokens per choice the client asked for (or the model's default bound) */
  outputBound: number;
  choices: number;
  /** what the call would like to hold */
  wanted: number;
  /** the least worth holding: the prompt and a minimal answer per choice */
  minimum: number;
  /** what the tokens held cost at most: the dearest of the candidates' prices (undefined: all free) */
  cost: CostRule | undefined;
}

export function reservationBudget(
  model: ResolvedModel,
  req: ChatRequest,
  native?: NativeRequest,
  priceMultiplier = 1,
): Budget {
  // Sized for the largest bounds among the call's candidates: any of them may answer, some
  // with the native body.
  const promptBound = candidatePromptBound(model, req, native);
  const choices = req.n ?? 1;
  const outputBound = req.max_completion_tokens ?? req.max_tokens ?? largestOutputBound(model);
  return {
    promptBound,
    perRequestOverhead: model.overheads.per_request,
    outputBound,
    choices,
    wanted: promptBound + outputBound * choices,
    minimum: promptBound + Math.min(MIN_OUTPUT_TOKENS, outputBound) * choices,
    cost: candidateCost(model, promptBound, priceMultiplier),
  };
}

/**
 * What an embeddings call reserves: its inputs' bound and no output, so the least it can hold
 * is all it wants; its money at the dearest input price among the candidates.
 */
export function embeddingBudget(model: ResolvedModel, req: EmbeddingRequest, priceMultiplier = 1): Budget {
  const promptBound = candidateEmbeddingBound(model, req);
  return {
    promptBound,
    perRequestOverhead: model.overheads.per_request,
    outputBound: 0,
    choices: 1,
    wanted: promptBound,
    minimum: promptBound,
    cost: candidateCost(model, promptBound, priceMultiplier),
  };
}

/** The dearest prompt and output prices among the call's candidates, as one rule. */
function candidateCost(model: ResolvedModel, promptBound: number, multiplier: number): CostRule | undefined {
  let fixed = 0;
  let perToken = 0;
  for (const d of candidates(model)) {
    const rule = costRule(promptBound, d.pricing, multiplier);
    fixed = Math.max(fixed, rule.fixed);
    perToken = Math.max(perToken, rule.perToken);
  }
  return fixed || perToken ? { fixed, perToken, promptTokens: promptBound } : undefined;
}

/** The output bound per choice that fits in what the ledger actually held. */
export function cappedOutput(budget: Budget, heldTokens: number): number {
  return Math.floor((heldTokens - budget.promptBound) / budget.choices);
}
