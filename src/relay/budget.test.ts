import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fakeProvider, testModel } from "../../test/support/models.ts";
import { type ChatRequest, parseChatRequest } from "../domain/chat-request.ts";
import type { ResolvedModel } from "../models/registry.ts";
import { DEFAULT_PROMPT_OVERHEADS, type PromptOverheads } from "../providers/prompt-bound.ts";
import { cappedOutput, MIN_OUTPUT_TOKENS, reservationBudget } from "./budget.ts";

const PROMPT_BOUND = 100;

function model(maxOutput = 4096, seen: [ChatRequest, PromptOverheads][] = []): ResolvedModel {
  const provider = fakeProvider({
    promptBound: (req, overheads) => {
      seen.push([req, overheads]);
      return PROMPT_BOUND;
    },
  });
  const m = testModel({ id: "m", max_output_tokens: maxOutput }, [{ providerId: "p", provider }]);
  m.overheads = { ...DEFAULT_PROMPT_OVERHEADS, per_request: 7 };
  return m;
}

const req = (fields: Record<string, unknown> = {}) =>
  parseChatRequest({ model: "m", messages: [{ role: "user", content: "hi" }], ...fields });

describe("reservationBudget", () => {
  test("without a client bound: the model's default output bound, one choice", () => {
    const seen: [ChatRequest, PromptOverheads][] = [];
    const r = req();
    const m = model(4096, seen);
    assert.deepEqual(reservationBudget(m, r), {
      promptBound: PROMPT_BOUND,
      perRequestOverhead: 7,
      outputBound: 4096,
      choices: 1,
      wanted: PROMPT_BOUND + 4096,
      minimum: PROMPT_BOUND + MIN_OUTPUT_TOKENS,
      cost: undefined,
    });
    assert.deepEqual(
      seen,
      [[r, m.overheads]],
      "the prompt bound is the provider's, for this request, under the model's current overheads",
    );
  });

  test("max_tokens is the output bound", () => {
    const b = reservationBudget(model(), req({ max_tokens: 300 }));
    assert.equal(b.outputBound, 300);
    assert.equal(b.wanted, PROMPT_BOUND + 300);
  });

  test("max_completion_tokens wins over max_tokens", () => {
    const b = reservationBudget(model(), req({ max_tokens: 300, max_completion_tokens: 50 }));
    assert.equal(b.outputBound, 50);
    assert.equal(b.wanted, PROMPT_BOUND + 50);
  });

  test("n multiplies the output part of both wanted and minimum", () => {
    const b = reservationBudget(model(), req({ max_completion_tokens: 200, n: 3 }));
    assert.equal(b.choices, 3);
    assert.equal(b.wanted, PROMPT_BOUND + 600);
    assert.equal(b.minimum, PROMPT_BOUND + MIN_OUTPUT_TOKENS * 3);
  });

  test("an output bound below the minimal answer is the minimum itself", () => {
    const b = reservationBudget(model(), req({ max_tokens: 5, n: 2 }));
    assert.equal(b.minimum, PROMPT_BOUND + 10);
    assert.equal(b.minimum, b.wanted);
  });
});

describe("reservationBudget with fallbacks and several deployments", () => {
  test("sized for the largest prompt bound and default output bound among the candidates", () => {
    const bound = (n: number) => fakeProvider({ promptBound: () => n });
    const fallback = testModel({ id: "f", max_output_tokens: 8000 }, [
      { providerId: "f", provider: bound(300) },
    ]);
    const m = testModel(
      { id: "m", max_output_tokens: 1000, fallbacks: ["f"] },
      [
        { providerId: "a", provider: bound(100) },
        { providerId: "b", provider: bound(200) },
      ],
      [fallback],
    );
    const b = reservationBudget(m, req());
    assert.equal(b.promptBound, 300, "the fallback's provider counts the most");
    assert.equal(b.outputBound, 8000, "the fallback's default output bound is the largest");
    assert.equal(reservationBudget(m, req({ max_tokens: 50 })).outputBound, 50, "the client's bound wins");
  });

  test("providers sharing one prompt rule are asked once", () => {
    let asked = 0;
    const rule = () => {
      asked++;
      return 10;
    };
    const m = testModel({ id: "m" }, [
      { providerId: "a", provider: fakeProvider({ promptBound: rule }) },
      { providerId: "b", provider: fakeProvider({ promptBound: rule }) },
    ]);
    assert.equal(reservationBudget(m, req()).promptBound, 10);
    assert.equal(asked, 1);
  });
});

describe("cappedOutput", () => {
  test("all that was wanted held: the output bound as asked", () => {
    const b = reservationBudget(model(), req({ max_tokens: 300, n: 2 }));
    assert.equal(cappedOutput(b, b.wanted), 300);
  });

  test("less held: what is left after the prompt, shared by the choices, rounded down", () => {
    const b = reservationBudget(model(), req({ max_tokens: 300, n: 3 }));
    assert.equal(cappedOutput(b, PROMPT_BOUND + 100), 33);
    assert.equal(cappedOutput(b, b.minimum), MIN_OUTPUT_TOKENS);
  });
});
