import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { answerFor } from "./answer-mode.ts";

describe("answerFor", () => {
  test("safety off: streams stream as they come, the rest is one JSON body; no headers", () => {
    for (const streaming of ["json", "reviewed"] as const) {
      assert.deepEqual(answerFor(false, { enabled: false, streaming }), {
        mode: "json",
        safetyMode: null,
        headers: undefined,
      });
      assert.deepEqual(answerFor(true, { enabled: false, streaming }), {
        mode: "sse",
        safetyMode: null,
        headers: undefined,
      });
    }
  });

  test("safety on, not streaming: one reviewed JSON body, said in x-content-safety", () => {
    for (const streaming of ["json", "reviewed"] as const)
      assert.deepEqual(answerFor(false, { enabled: true, streaming }), {
        mode: "json",
        safetyMode: "json",
        headers: { "x-content-safety": "on" },
      });
  });

  test("safety on, streaming answered as JSON: the stream header says json", () => {
    assert.deepEqual(answerFor(true, { enabled: true, streaming: "json" }), {
      mode: "json",
      safetyMode: "json",
      headers: { "x-content-safety": "on", "x-content-safety-stream": "json" },
    });
  });

  test("Messages and Responses streams are reviewed streams unless json was chosen; chat completions keep the spec's JSON", () => {
    const unchosen = { enabled: true, streaming: "json" as const, streamingChosen: false };
    for (const api of ["messages", "responses"] as const) {
      assert.equal(answerFor(true, unchosen, api).mode, "reviewed", api);
      assert.equal(
        answerFor(true, { ...unchosen, streamingChosen: true }, api).mode,
        "json",
        `${api}, chosen`,
      );
      assert.equal(answerFor(false, unchosen, api).mode, "json", `${api}, not streamed`);
    }
    assert.equal(answerFor(true, unchosen, "chat.completions").mode, "json");
  });

  test("safety on, reviewed streaming: streamed in reviewed segments", () => {
    assert.deepEqual(answerFor(true, { enabled: true, streaming: "reviewed" }), {
      mode: "reviewed",
      safetyMode: "reviewed",
      headers: { "x-content-safety": "on", "x-content-safety-stream": "reviewed" },
    });
  });
});
