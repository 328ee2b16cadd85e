// The model-judge reviewer: a configured model (a Llama Guard served behind an
// OpenAI-compatible server such as vLLM) classifies the text. Called through the gateway's own
// provider registry, so it shares the provider's pool, timeouts and key. Llama Guard's chat
// template builds its classification prompt from the conversation and judges the last turn:
// the caller's message (input stage) or the model's answer to it (output stage).
import type { ChatRequest } from "../../domain/chat-request.ts";
import { UpstreamError } from "../../errors/upstream-error.ts";
import type { ResolvedModel } from "../../models/registry.ts";
import { type Reviewer, ReviewerError, type ReviewRequest, type ReviewVerdict } from "../types.ts";

/** "safe", or "unsafe" and the codes on the next line; nothing more is needed */
const MAX_TOKENS = 32;

/** Llama Guard 3's hazard categories (MLCommons taxonomy plus code interpreter abuse). */
export const LLAMA_GUARD_CATEGORIES: ReadonlyMap<string, string> = new Map([
  ["S1", "S1: violent crimes"],
  ["S2", "S2: non-violent crimes"],
  ["S3", "S3: sex-related crimes"],
  ["S4", "S4: child sexual exploitation"],
  ["S5", "S5: defamation"],
  ["S6", "S6: specialized advice"],
  ["S7", "S7: privacy"],
  ["S8", "S8: intellectual property"],
  ["S9", "S9: indiscriminate weapons"],
  ["S10", "S10: hate"],
  ["S11", "S11: suicide & self-harm"],
  ["S12", "S12: sexual content"],
  ["S13", "S13: elections"],
  ["S14", "S14: code interpreter abuse"],
]);

/** What a category code may look like; anything else on the codes line is not a code. */
const CODE_RE = /^[A-Za-z0-9_.-]{1,32}$/;
const MAX_CODES = 16;

export class ModelJudgeReviewer implements Reviewer {
  readonly type = "model-judge";
  readonly #model: ResolvedModel;

  constructor(model: ResolvedModel) {
    this.#model = model;
  }

  async review(request: ReviewRequest): Promise<ReviewVerdict> {
    const messages: ChatRequest["messages"] =
      request.stage === "input"
        ? [{ role: "user", content: request.text }]
        : [
            { role: "user", content: request.context ?? "" },
            { role: "assistant", content: request.text },
          ];
    const model = this.#model.config.id;
    let content: unknown;
    try {
      const completion = await this.#model.provider.complete({
        request: { model, messages, temperature: 0 },
        upstreamModel: this.#model.upstreamModel,
        outputBound: MAX_TOKENS,
        signal: request.signal,
      });
      content = completion.choices[0]?.message?.content;
    } catch (err) {
      if (request.signal.aborted)
        throw new ReviewerError("the judge review was stopped (its time was up or the client left)");
      // UpstreamError messages are already sanitised of addresses and keys; others may not be.
      if (err instanceof UpstreamError)
        throw new ReviewerError(`the judge model "${model}" failed: ${err.message}`);
      throw new ReviewerError(`the judge model "${model}" could not be called`);
    }
    return parseLlamaGuard(content, model);
  }
}

/**
 * Reads a Llama Guard answer: first line `safe` or `unsafe`, then for `unsafe` a line of
 * comma-separated codes (`S1,S10`). Known codes get their names; unknown ones are kept as
 * they are. An `unsafe` without codes flags with no category.
 */
export function parseLlamaGuard(content: unknown, model = "the judge model"): ReviewVerdict {
  const lines = typeof content === "string" ? content.trim().split(/\r?\n/) : [];
  const verdict = lines[0]?.trim().toLowerCase();
  if (verdict === "safe") return { flagged: false, categories: [] };
  if (verdict !== "unsafe")
    // The answer itself is not quoted: it may repeat the text under review.
    throw new ReviewerError(`the judge model "${model}" did not answer "safe" or "unsafe"`);
  const categories: string[] = [];
  for (const raw of (lines[1] ?? "").split(",")) {
    const code = raw.trim();
    if (!CODE_RE.test(code) || categories.length >= MAX_CODES) continue;
    const name = LLAMA_GUARD_CATEGORIES.get(code.toUpperCase()) ?? code;
    if (!categories.includes(name)) categories.push(name);
  }
  return { flagged: true, categories };
}
