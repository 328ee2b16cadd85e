// The bench's requests in each client API's shape, and the completeness check of the
// preflight: an answer cut short or in another API's shape must not pass.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { looksComplete, requestBody } from "./requests.ts";

const sse = (events: { event?: string; data: unknown }[]) =>
  events
    .map(
      (e) =>
        `${e.event ? `event: ${e.event}\n` : ""}data: ${typeof e.data === "string" ? e.data : JSON.stringify(e.data)}\n\n`,
    )
    .join("");

describe("bench request bodies", () => {
  test("chat: system and user messages; streams ask for usage", () => {
    const json = JSON.parse(requestBody("chat", "m", 20, "json"));
    assert.equal(json.messages.length, 2);
    assert.equal(json.stream, undefined);
    const stream = JSON.parse(requestBody("chat", "m", 20, "stream"));
    assert.deepEqual(stream.stream_options, { include_usage: true });
  });

  test("messages: max_tokens above the completion, the system prompt apart, stream when streaming", () => {
    const body = JSON.parse(requestBody("messages", "m", 20, "stream"));
    assert.deepEqual(Object.keys(body), ["model", "max_tokens", "system", "messages", "stream"]);
    assert.ok(body.max_tokens >= 20);
    assert.equal(JSON.parse(requestBody("messages", "m", 5000, "json")).max_tokens, 5000);
    assert.match(body.messages[0].content, /mock:tokens=20/);
  });

  test("responses: instructions and input, not stored", () => {
    const body = JSON.parse(requestBody("responses", "m", 20, "json"));
    assert.deepEqual(Object.keys(body), ["model", "instructions", "input", "store"]);
    assert.equal(body.store, false);
    assert.equal(JSON.parse(requestBody("responses", "m", 20, "stream")).stream, true);
  });
});

describe("bench preflight: a complete answer", () => {
  const chatChunk = { choices: [{ index: 0, delta: { content: "Hi" } }] };
  const chatStream = sse([{ data: chatChunk }, { data: "[DONE]" }]);
  const messagesStream = sse([
    { event: "message_start", data: { type: "message_start" } },
    { event: "content_block_delta", data: { type: "content_block_delta" } },
    { event: "message_delta", data: { type: "message_delta" } },
    { event: "message_stop", data: { type: "message_stop" } },
  ]);
  const completed = { type: "response.completed", response: { status: "completed" } };
  const responsesStream = sse([
    { event: "response.created", data: { type: "response.created" } },
    { event: "response.output_text.delta", data: { type: "response.output_text.delta" } },
    { event: "response.completed", data: completed },
  ]);

  test("streams end with their API's last event", () => {
    assert.ok(looksComplete("chat", "stream", chatStream));
    assert.ok(looksComplete("messages", "stream", messagesStream));
    assert.ok(looksComplete("responses", "stream", responsesStream));
  });

  test("a stream cut before its last event, or another API's stream, does not pass", () => {
    // without its last event
    const cut = (text: string) => `${text.trimEnd().split("\n\n").slice(0, -1).join("\n\n")}\n\n`;
    assert.ok(!looksComplete("chat", "stream", cut(chatStream)));
    assert.ok(!looksComplete("messages", "stream", cut(messagesStream)));
    assert.ok(!looksComplete("responses", "stream", cut(responsesStream)));
    assert.ok(!looksComplete("messages", "stream", chatStream));
    assert.ok(!looksComplete("responses", "stream", messagesStream));
    const failed = sse([
      { event: "response.output_text.delta", data: { type: "response.output_text.delta" } },
      { event: "response.failed", data: { type: "response.failed" } },
    ]);
    assert.ok(!looksComplete("responses", "stream", failed));
    const error = sse([{ event: "error", data: { type: "error" } }]);
    assert.ok(!looksComplete("messages", "stream", error));
  });

  test("JSON answers are their API's complete object", () => {
    const chat = { choices: [{ message: { content: "Hi" } }] };
    const message = { type: "message", content: [{ type: "text", text: "Hi" }], stop_reason: "end_turn" };
    const response = {
      object: "response",
      status: "completed",
      output: [{ type: "message", content: [{ type: "output_text", text: "Hi" }] }],
    };
    assert.ok(looksComplete("chat", "json", JSON.stringify(chat)));
    assert.ok(looksComplete("messages", "json", JSON.stringify(message)));
    assert.ok(looksComplete("responses", "json", JSON.stringify(response)));
    assert.ok(!looksComplete("messages", "json", JSON.stringify(chat)));
    assert.ok(!looksComplete("messages", "json", JSON.stringify({ ...message, stop_reason: "max_tokens" })));
    assert.ok(!looksComplete("responses", "json", JSON.stringify({ ...response, status: "incomplete" })));
    assert.ok(!looksComplete("responses", "json", JSON.stringify(message)));
    assert.ok(!looksComplete("chat", "json", '{"choices":[{"message":{"content":"Hi"'));
  });
});
