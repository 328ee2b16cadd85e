// What every client API says in place of model output that content safety withheld, and the
// documented extension field it carries.
import type { ReviewOutcome } from "./policy.ts";

/**
 * What a client sees in place of model output that content safety withheld: the gateway's
 * words, naming the gateway and the request, so that whoever reads it (in Claude Code, Codex,
 * a chat window) knows whose policy it was and has the id to ask the operator about, and does
 * not take it for the model provider's refusal (which the vendor's clients word as their own).
 */
export function withheldNotice(requestId: string): string {
  return (
    `This gateway's content policy withheld this answer (request ${requestId}). ` +
    "It was not refused by the model's provider; the gateway's operator can look the request up."
  );
}

/** The documented extension field of an answer content safety withheld. */
export function safetyExtension(outcome: ReviewOutcome) {
  return { verdict: "flagged", stage: "output", categories: outcome.categories };
}
