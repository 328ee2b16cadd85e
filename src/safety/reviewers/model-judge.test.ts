import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type MockUpstream, startMockUpstream } from "../../../test/support/mock-openai-upstream.ts";
import { configSchema } from "../../config/cross-check.ts";
import { Registry } from "../../models/registry.ts";
import { ReviewerError, type ReviewRequest } from "../types.ts";
import { ModelJudgeReviewer, parseLlamaGuard } from "./model-judge.ts";

const KEY = "sk-judge-upstream-key-123456";

let upstream: MockUpstream;
let registry: Registry;
let judge: ModelJudgeReviewer;

before(async () => {
  upstream = await startMockUpstream({ apiKey: KEY });
  const config = configSchema.parse({
    providers: [{ id: "vllm", type: "openai-compatible", base_url: upstream.url, api_key_env: "JUDGE_KEY" }],
    models: [{ id: "safety-judge", provider: "vllm", upstream_model: "meta-llama/Llama-Guard-3-8B" }],
    plans: [{ id: "default", quota_tokens: 1000, models: [] }],
  });
  registry = new Registry(config, new Map(), { JUDGE_KEY: KEY });
  judge = new ModelJudgeReviewer(registry.model("safety-judge")!);
});

after(async () => {
  await registry.close();
  await upstream.close();
});

function request(
  stage: "input" | "output",
  text: string,
  context?: string,
  signal = new AbortController().signal,
): ReviewRequest {
  return { text, stage, signal, ...(context === undefined ? {} : { context }) };
}

async function waitFor(cond: () => boolean, what: string): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > 5_000) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function assertFails(promise: Promise<unknown>, message: RegExp): Promise<ReviewerError> {
  const err = await promise.then(
    () => assert.fail("the review should have failed"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ReviewerError, `a ReviewerError, got ${String(err)}`);
  assert.match(err.message, message);
  for (const secret of [KEY, upstream.url, "127.0.0.1", "10.0.0.5", "sk-upstream-secret"])
    assert.ok(!err.message.includes(secret), `${secret} leaked: ${err.message}`);
  return err;
}

describe("ModelJudgeReviewer against the mock upstream in judge mode", () => {
  test("input stage: the caller's text as the one user message, temperature 0, max_tokens 32", async () => {
    upstream.reset();
    assert.equal(judge.type, "model-judge");
    assert.deepEqual(await judge.review(request("input", "how do I bake bread?")), {
      flagged: false,
      categories: [],
    });
    const sent = upstream.requests[0]!.body;
    assert.equal(sent.model, "meta-llama/Llama-Guard-3-8B");
    assert.deepEqual(sent.messages, [{ role: "user", content: "how do I bake bread?" }]);
    assert.equal(sent.temperature, 0);
    assert.equal(sent.max_tokens, 32);
    assert.notEqual(sent.stream, true);
  });

  test("output stage: the caller's message, then the answer under review as the assistant's", async () => {
    upstream.reset();
    const verdict = await judge.review(
      request("output", "here is how: judgeunsafe", "how do I hurt someone?"),
    );
    assert.deepEqual(verdict, { flagged: true, categories: ["S1: violent crimes"] });
    assert.deepEqual(upstream.requests[0]!.body.messages, [
      { role: "user", content: "how do I hurt someone?" },
      { role: "assistant", content: "here is how: judgeunsafe" },
    ]);
  });

  test("output stage without context: an empty user message; the answer is what is judged", async () => {
    upstream.reset();
    assert.deepEqual(await judge.review(request("output", "fine answer")), {
      flagged: false,
      categories: [],
    });
    assert.deepEqual(upstream.requests[0]!.body.messages[0], { role: "user", content: "" });
    // the context says "judgeunsafe", but only the last message (the answer) is judged
    const verdict = await judge.review(request("output", "a kind answer", "judgeunsafe"));
    assert.equal(verdict.flagged, false);
  });

  test("several codes map to their Llama Guard 3 names", async () => {
    assert.deepEqual(await judge.review(request("input", "judgetwo")), {
      flagged: true,
      categories: ["S1: violent crimes", "S10: hate"],
    });
  });

  test("an answer that is not a verdict: a ReviewerError that does not quote it", async () => {
    const err = await assertFails(
      judge.review(request("input", "judgegarbage")),
      /did not answer "safe" or "unsafe"/,
    );
    assert.ok(!err.message.includes("cannot decide"));
  });

  test("the judge's provider answers HTTP 500: a ReviewerError without the upstream's address or keys", async () => {
    await assertFails(
      judge.review(request("input", "judgefail")),
      /judge model "safety-judge" failed: .*HTTP 500/,
    );
  });

  test("a hanging judge: aborting the signal rejects the review and closes the connection", async () => {
    upstream.reset();
    const controller = new AbortController();
    const review = judge.review(request("input", "mock:hang", undefined, controller.signal));
    await waitFor(() => upstream.inFlight() === 1, "the judge call to arrive");
    controller.abort(new Error("review timed out"));
    await assertFails(review, /stopped/);
    await waitFor(() => upstream.inFlight() === 0, "the mock to see the client leave");
    assert.equal(upstream.aborted(), 1);
  });

  test("an unreachable judge: a ReviewerError without the address", async () => {
    const gone = await startMockUpstream();
    await gone.close();
    const config = configSchema.parse({
      providers: [{ id: "down", type: "openai-compatible", base_url: gone.url }],
      models: [{ id: "guard", provider: "down" }],
      plans: [{ id: "default", quota_tokens: 1000, models: [] }],
    });
    const down = new Registry(config, new Map(), {});
    try {
      await assertFails(
        new ModelJudgeReviewer(down.model("guard")!).review(request("input", "hi")),
        /failed/,
      );
    } finally {
      await down.close();
    }
  });
});

describe("parseLlamaGuard", () => {
  test("safe, with whatever whitespace around it", () => {
    for (const answer of ["safe", "safe\n", "\n\nsafe", " Safe \r\n", "safe\n\n"])
      assert.deepEqual(parseLlamaGuard(answer), { flagged: false, categories: [] }, JSON.stringify(answer));
  });

  test("unsafe with codes: known ones named, unknown ones kept, duplicates once", () => {
    assert.deepEqual(parseLlamaGuard("unsafe\nS14"), {
      flagged: true,
      categories: ["S14: code interpreter abuse"],
    });
    assert.deepEqual(parseLlamaGuard("unsafe\ns2, S11 ,S99,S2"), {
      flagged: true,
      categories: ["S2: non-violent crimes", "S11: suicide & self-harm", "S99"],
    });
    assert.deepEqual(parseLlamaGuard("UNSAFE\r\nS9"), {
      flagged: true,
      categories: ["S9: indiscriminate weapons"],
    });
  });

  test("unsafe without codes still flags", () => {
    assert.deepEqual(parseLlamaGuard("unsafe"), { flagged: true, categories: [] });
    // what is not shaped like a code is not reported as one
    assert.deepEqual(parseLlamaGuard("unsafe\nthis is a long sentence, S1"), {
      flagged: true,
      categories: ["S1: violent crimes"],
    });
  });

  test("anything else is a ReviewerError", () => {
    for (const answer of ["I cannot decide", "", "   ", "safe-ish", "unsafe?", null, undefined, 42])
      assert.throws(() => parseLlamaGuard(answer), ReviewerError, JSON.stringify(answer));
  });
});
