// The rules reviewer: the operator's own terms and regular expressions. No network, so it is
// the cheap first link of a chain. Terms are matched on words after normalisation (see
// ../normalize.ts and ../term-matcher.ts); patterns run against the normalised text.
// Everything is compiled once, here.
import type { ReviewerConfig } from "../../config/schema.ts";
import { normalizeForReview } from "../normalize.ts";
import { TermMatcher } from "../term-matcher.ts";
import { type Reviewer, ReviewerError, type ReviewRequest, type ReviewVerdict } from "../types.ts";

type RulesConfig = Extract<ReviewerConfig, { type: "rules" }>;

export class RulesReviewer implements Reviewer {
  readonly type = "rules";
  readonly local = true;
  readonly #terms: TermMatcher;
  readonly #patterns: RegExp[];
  readonly #category: string;

  constructor(config: RulesConfig) {
    this.#terms = new TermMatcher(config.terms);
    // No `g` flag: test() then keeps no state between reviews.
    this.#patterns = config.patterns.map((source) => new RegExp(source, "iu"));
    this.#category = config.category;
  }

  async review(request: ReviewRequest): Promise<ReviewVerdict> {
    if (request.signal.aborted) throw new ReviewerError("the rules review was stopped before it ran");
    if (!request.text) return { flagged: false, categories: [] };
    const text = normalizeForReview(request.text);
    if (this.#terms.find(text) !== undefined) return { flagged: true, categories: [this.#category] };
    // Runs of whitespace count as one space for patterns, so "card   number" and a line break
    // between the words still match the operator's `\bcard number\b`.
    const spaced = this.#patterns.length ? text.text.replace(/\s+/gu, " ") : "";
    const flagged = this.#patterns.some((pattern) => pattern.test(spaced));
    return { flagged, categories: flagged ? [this.#category] : [] };
  }
}
