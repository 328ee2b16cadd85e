// The money side of the no-false-refusal measurement (issue #18): what ask() can cost at least,
// and the check after a burst of ask() calls on a key with a budget, on one instance or many:
// the records' costs add up to what the key spent, spent never passes the budget, the budget
// was used until the minimum no longer fit, and every refusal is budget_exceeded with what the
// budget left, below the minimum.
import assert from "node:assert/strict";
import type { Kysely } from "kysely";
import { parseChatRequest } from "../../src/domain/chat-request.ts";
import { nanosFor } from "../../src/ledger/money.ts";
import { configuredPricing, costRule } from "../../src/prices/pricing.ts";
import { DEFAULT_PROMPT_OVERHEADS, promptUpperBound } from "../../src/providers/prompt-bound.ts";
import type { Database } from "../../src/store/schema.ts";
import type { Answer } from "./chat-call.ts";
import { TEST_MODEL, TEST_PRICING } from "./gateway.ts";

const ASK_PROMPT_BOUND = promptUpperBound(
  parseChatRequest({
    model: TEST_MODEL,
    max_tokens: 30,
    messages: [{ role: "user", content: "hello mock:tokens=30" }],
  }),
  DEFAULT_PROMPT_OVERHEADS,
);

/** The least ask() holds at TEST_PRICING: its prompt bound and 16 output tokens, in nanodollars. */
export const ASK_MINIMUM_NANOS = nanosFor(
  { ...costRule(ASK_PROMPT_BOUND, configuredPricing(TEST_PRICING)), promptTokens: ASK_PROMPT_BOUND },
  ASK_PROMPT_BOUND + 16,
);

/** Checks a key's books after `answers` to ask() calls under a budget of `budget` nanodollars. */
export async function checkBudgetHeld(
  db: Kysely<Database>,
  keyId: string,
  budget: number,
  answers: Answer[],
): Promise<{ answered: number; spent: number }> {
  const records = await db
    .selectFrom("call_records")
    .select("cost_nanos")
    .where("key_id", "=", keyId)
    .execute();
  const row = await db
    .selectFrom("api_keys")
    .select(["spent_nanos", "reserved_nanos"])
    .where("id", "=", keyId)
    .executeTakeFirstOrThrow();
  const spent = Number(row.spent_nanos);
  const refused = answers.filter((a) => a.status !== 200);
  assert.equal(records.length, answers.length, "every call has its record");
  assert.equal(
    records.reduce((sum, r) => sum + Number(r.cost_nanos), 0),
    spent,
    "the records' costs add up to what the key spent",
  );
  assert.ok(spent <= budget, `spent ${spent} ≤ ${budget}`);
  assert.ok(budget - spent < ASK_MINIMUM_NANOS, "calls were answered until the minimum no longer fit");
  assert.ok(refused.length > 0 && refused.length < answers.length);
  for (const a of refused) {
    assert.equal(a.status, 429);
    assert.equal(a.code, "budget_exceeded", "refused for the budget, not for waiting on calls in flight");
    const left = /\(\$([\d.]+) left;/.exec(a.message ?? "");
    assert.ok(left, `a refusal says what the budget leaves: ${a.message}`);
    assert.ok(
      Math.round(Number(left[1]) * 1e9) < ASK_MINIMUM_NANOS,
      `refused with $${left[1]} left, which could not cover the minimum`,
    );
  }
  assert.equal(Number(row.reserved_nanos), 0);
  return { answered: answers.length - refused.length, spent };
}
