import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { errorSchema, readChunk, readCompletion, readUsage } from "./wire.ts";

describe("readUsage", () => {
  test("the three figures, the cache and reasoning breakdown, and the detail fields as sent", () => {
    // OpenAI's usage chunk (gpt-4.1), with a cached prompt and reasoning tokens
    const details = {
      prompt_tokens_details: { cached_tokens: 1920, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 64,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    };
    assert.deepEqual(
      readUsage({ prompt_tokens: 2006, completion_tokens: 300, total_tokens: 2306, ...details }),
      {
        prompt: 2006,
        completion: 300,
        cachedInput: 1920,
        cacheWrite: 0,
        reasoning: 64,
        details,
      },
    );
  });

  test("other servers' extra usage fields pass through in details; totals stay out of them", () => {
    // DeepSeek adds its own cache figures beside OpenAI's
    const usage = readUsage({
      prompt_tokens: 6,
      completion_tokens: 92,
      total_tokens: 98,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 81 },
      prompt_cache_hit_tokens: 0,
      prompt_cache_miss_tokens: 6,
    });
    assert.equal(usage?.reasoning, 81);
    assert.deepEqual(usage?.details, {
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 81 },
      prompt_cache_hit_tokens: 0,
      prompt_cache_miss_tokens: 6,
    });
  });

  test("without breakdowns (Ollama, vLLM) cache and reasoning are 0", () => {
    for (const extra of [{}, { prompt_tokens_details: null, completion_tokens_details: null }]) {
      const usage = readUsage({ prompt_tokens: 17, completion_tokens: 40, total_tokens: 57, ...extra });
      assert.equal(usage?.prompt, 17);
      assert.equal(usage?.completion, 40);
      assert.equal(usage?.cachedInput, 0);
      assert.equal(usage?.reasoning, 0);
    }
  });

  test("a broken breakdown does not lose the totals", () => {
    const usage = readUsage({
      prompt_tokens: 10,
      completion_tokens: 5,
      prompt_tokens_details: { cached_tokens: "many" },
      completion_tokens_details: "n/a",
    });
    assert.equal(usage?.prompt, 10);
    assert.equal(usage?.completion, 5);
    assert.equal(usage?.cachedInput, 0);
    assert.equal(usage?.reasoning, 0);
  });

  test("no usage, or a figure missing or not a count, is undefined", () => {
    for (const raw of [
      undefined,
      null,
      "12",
      {},
      { prompt_tokens: 10 },
      { completion_tokens: 5 },
      { prompt_tokens: -1, completion_tokens: 5 },
      { prompt_tokens: 10.5, completion_tokens: 5 },
      { prompt_tokens: "10", completion_tokens: 5 },
      { prompt_tokens: 10, completion_tokens: null },
    ])
      assert.equal(readUsage(raw), undefined, JSON.stringify(raw));
  });
});

describe("finish reasons", () => {
  const finishOf = (finish_reason: unknown) =>
    readChunk({ choices: [{ index: 0, delta: {}, finish_reason }] })?.choices[0]?.finish_reason;

  test("OpenAI's own reasons pass", () => {
    for (const r of ["stop", "length", "tool_calls", "content_filter", "function_call"])
      assert.equal(finishOf(r), r);
  });

  test("another server's word for 'it ended' reads as stop", () => {
    for (const r of ["eos", "end_turn", "error", "abort"]) assert.equal(finishOf(r), "stop", r);
  });

  test("null or absent stays null", () => {
    assert.equal(finishOf(null), null);
    assert.equal(readChunk({ choices: [{ index: 0, delta: {} }] })?.choices[0]?.finish_reason, null);
  });

  test("an empty finish_reason (Ollama, ollama/ollama#4357; SGLang 0.4) means not finished: null", () => {
    assert.equal(finishOf(""), null);
  });

  test("the same in a whole completion", () => {
    const parsed = readCompletion({
      choices: [{ index: 0, message: { role: "assistant", content: "x" }, finish_reason: "eos" }],
    });
    assert.equal(parsed?.choices[0]?.finish_reason, "stop");
  });
});

describe("chunk and completion schemas", () => {
  test("unknown fields pass through untouched", () => {
    const parsed = readChunk({
      id: "chatcmpl-a0e8",
      system_fingerprint: "fp_ollama",
      choices: [{ index: 0, delta: { content: "", reasoning: "Need" }, logprobs: null, stop_reason: null }],
    });
    assert.equal(parsed?.system_fingerprint, "fp_ollama");
    assert.deepEqual(parsed?.choices[0], {
      index: 0,
      delta: { content: "", reasoning: "Need" },
      logprobs: null,
      stop_reason: null,
      finish_reason: null,
    });
  });

  test("a delta that is not an object reads as empty; a missing choice index is refused", () => {
    assert.deepEqual(readChunk({ choices: [{ index: 0, delta: null }] })?.choices[0]?.delta, {});
    assert.deepEqual(readChunk({ choices: [{ index: 0, delta: [1] }] })?.choices[0]?.delta, {});
    assert.equal(readChunk({ choices: [{ delta: {} }] }), undefined);
    assert.equal(readChunk({ choices: [{ index: -1, delta: {} }] }), undefined);
    assert.equal(readChunk({ choices: [{ index: 0.5, delta: {} }] }), undefined);
    assert.equal(readChunk({ choices: [{ index: 0, delta: {}, finish_reason: 3 }] }), undefined);
    assert.equal(readChunk({ choices: [null] }), undefined);
    assert.equal(readChunk({ object: "chat.completion.chunk" }), undefined);
    assert.equal(readChunk([]), undefined);
  });

  test("a completion message without a role is the assistant's", () => {
    const parsed = readCompletion({
      choices: [{ index: 0, message: { content: "hi" }, finish_reason: "stop" }],
    });
    assert.equal(parsed?.choices[0]?.message.role, "assistant");
  });

  test("a completion whose choice has no index, no message object, or a finish reason that is no string is refused", () => {
    assert.equal(readCompletion({ choices: [{ message: { content: "x" } }] }), undefined);
    assert.equal(readCompletion({ choices: [{ index: 0, message: "x" }] }), undefined);
    assert.equal(readCompletion({ choices: [{ index: 0, message: {}, finish_reason: 1 }] }), undefined);
    assert.equal(readCompletion({ id: "x" }), undefined);
    assert.deepEqual(readCompletion({ id: "x", choices: [], usage: { a: 1 } }), {
      id: "x",
      choices: [],
      usage: { a: 1 },
    });
  });
});

describe("errorSchema", () => {
  test("OpenAI's error object", () => {
    const parsed = errorSchema.parse({
      error: {
        message: "Input tokens exceed the configured limit of 272000 tokens.",
        type: "invalid_request_error",
        param: "messages",
        code: "context_length_exceeded",
      },
    });
    assert.deepEqual(parsed.error, {
      message: "Input tokens exceed the configured limit of 272000 tokens.",
      type: "invalid_request_error",
      param: "messages",
      code: "context_length_exceeded",
    });
  });

  test("a numeric code (vLLM) and fields of the wrong type are tolerated", () => {
    const parsed = errorSchema.parse({ error: { message: 42, code: 400, type: ["x"], object: "error" } });
    assert.equal(parsed.error.message, undefined);
    assert.equal((parsed.error as { code?: unknown }).code, 400);
  });

  test("the string form reads as a message", () => {
    assert.deepEqual(errorSchema.parse({ error: "model 'llama3' not found" }).error, {
      message: "model 'llama3' not found",
    });
  });

  test("a body without an error is refused", () => {
    for (const raw of [{}, { detail: "Not Found" }, "Internal Server Error", null])
      assert.equal(errorSchema.safeParse(raw).success, false, JSON.stringify(raw));
  });
});
