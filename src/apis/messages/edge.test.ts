// The Messages edge alone: the translation into the canonical request, the error mapping from
// the catalog, and the stream renderer for translated and native answers.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { GatewayError } from "../../errors/index.ts";
import type { Chunk } from "../../providers/types.ts";
import type { StreamEnd } from "../types.ts";
import { anthropicErrorAnswer } from "./errors.ts";
import { canonicalRequest, checkMessages, messagesRequestSchema, parseBody } from "./request.ts";
import { MessagesStream } from "./stream.ts";

const parse = (body: Record<string, unknown>) =>
  parseBody(messagesRequestSchema, { model: "m", max_tokens: 100, ...body });

function refusal(body: unknown): GatewayError {
  try {
    const req = parseBody(messagesRequestSchema, body);
    checkMessages(req);
  } catch (err) {
    assert.ok(err instanceof GatewayError);
    return err;
  }
  assert.fail("the body was accepted");
}

describe("the canonical request", () => {
  test("system blocks, tool results ahead of the user's words, tool uses, thinking left out", () => {
    const req = parse({
      max_tokens: 3000,
      system: [
        { type: "text", text: "You are Claude Code.", cache_control: { type: "ephemeral" } },
        { type: "text", text: "Be brief." },
      ],
      tools: [
        {
          name: "Read",
          description: "Reads a file",
          input_schema: { type: "object", properties: { path: { type: "string" } } },
          cache_control: { type: "ephemeral", ttl: "1h" },
        },
      ],
      tool_choice: { type: "any", disable_parallel_tool_use: true },
      thinking: { type: "enabled", budget_tokens: 1024 },
      stop_sequences: ["END"],
      metadata: { user_id: "u1" },
      top_k: 5,
      messages: [
        { role: "user", content: "Read a.txt" },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "I should read it.", signature: "sig" },
            { type: "text", text: "Reading." },
            { type: "tool_use", id: "toolu_1", name: "Read", input: { path: "a.txt" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "text", text: "and quickly" },
            { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "hello" }] },
          ],
        },
      ],
    });
    assert.deepEqual(canonicalRequest(req), {
      model: "m",
      max_tokens: 3000,
      messages: [
        { role: "system", content: "You are Claude Code.\nBe brief." },
        { role: "user", content: "Read a.txt" },
        {
          role: "assistant",
          content: "Reading.",
          tool_calls: [
            { id: "toolu_1", type: "function", function: { name: "Read", arguments: '{"path":"a.txt"}' } },
          ],
        },
        { role: "tool", tool_call_id: "toolu_1", content: "hello" },
        { role: "user", content: "and quickly" },
      ],
      stop: ["END"],
      user: "u1",
      tools: [
        {
          type: "function",
          function: {
            name: "Read",
            description: "Reads a file",
            parameters: { type: "object", properties: { path: { type: "string" } } },
          },
        },
      ],
      tool_choice: "required",
      parallel_tool_calls: false,
      reasoning_effort: "medium",
    });
  });

  test("images become image_url parts; a named tool choice a function; none stays none", () => {
    const req = parse({
      tools: [{ name: "w", input_schema: { type: "object" } }],
      tool_choice: { type: "tool", name: "w" },
      messages: [
        {
          role: "user",
          content: [
            { type: "image", source: { type: "url", url: "https://example.com/a.png" } },
            { type: "text", text: "what?" },
          ],
        },
      ],
    });
    const canonical = canonicalRequest(req);
    assert.deepEqual(canonical.messages[0], {
      role: "user",
      content: [
        { type: "image_url", image_url: { url: "https://example.com/a.png" } },
        { type: "text", text: "what?" },
      ],
    });
    assert.deepEqual(canonical.tool_choice, { type: "function", function: { name: "w" } });
    assert.equal(canonicalRequest(parse({ ...req, tool_choice: { type: "none" } })).tool_choice, "none");
  });
});

describe("validation, in Anthropic's words", () => {
  const ok = { model: "m", max_tokens: 10, messages: [{ role: "user", content: "hi" }] };
  const cases: [string, unknown, string, string][] = [
    ["not an object", [1], "The request body must be a JSON object.", ""],
    ["max_tokens missing", { model: "m", messages: ok.messages }, "max_tokens: Field required", "max_tokens"],
    [
      "max_tokens a string",
      { ...ok, max_tokens: "10" },
      "max_tokens: Invalid input: expected number, received string",
      "max_tokens",
    ],
    ["an unknown field", { ...ok, n: 2 }, "n: Extra inputs are not permitted", "n"],
    [
      "a block type not served",
      { ...ok, messages: [{ role: "user", content: [{ type: "document", source: {} }] }] },
      "messages.0.content.0.type: Input tag does not match any of the expected tags: 'text', 'image', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking' (other block types are not served by this gateway)",
      "messages.0.content.0.type",
    ],
    [
      "an unknown field in a block",
      { ...ok, messages: [{ role: "user", content: [{ type: "text", text: "x", colour: "red" }] }] },
      "messages.0.content.0.colour: Extra inputs are not permitted",
      "messages.0.content.0.colour",
    ],
    [
      "a system role",
      { ...ok, messages: [{ role: "system", content: "x" }] },
      `messages.0.role: Invalid option: expected one of "user"|"assistant"`,
      "messages.0.role",
    ],
    [
      "a server tool",
      { ...ok, tools: [{ type: "web_search_20250305", name: "web_search" }] },
      'tools.0.type: Invalid input: expected "custom"',
      "tools.0.type",
    ],
    [
      "cache_control of another type",
      { ...ok, system: [{ type: "text", text: "s", cache_control: { type: "persistent" } }] },
      'system.0.cache_control.type: Invalid input: expected "ephemeral"',
      "system.0.cache_control.type",
    ],
    [
      "a thinking budget not below max_tokens",
      { ...ok, max_tokens: 1024, thinking: { type: "enabled", budget_tokens: 1024 } },
      "`max_tokens` must be greater than `thinking.budget_tokens`.",
      "thinking.budget_tokens",
    ],
    [
      "a tool_choice naming no tool",
      { ...ok, tool_choice: { type: "tool", name: "x" } },
      "tool_choice.name: no tool is named 'x'.",
      "tool_choice.name",
    ],
    [
      "an empty message",
      { ...ok, messages: [{ role: "user", content: "" }] },
      "messages.0: all messages must have non-empty content except for the optional final assistant message",
      "messages.0.content",
    ],
    [
      "temperature above 1",
      { ...ok, temperature: 1.5 },
      "temperature: Too big: expected number to be <=1",
      "temperature",
    ],
  ];
  for (const [what, body, message, param] of cases)
    test(what, () => {
      const err = refusal(body);
      assert.equal(err.errorName, "invalid_request");
      assert.equal(err.message, message);
      assert.equal(err.param, param || null);
    });
});

describe("errors from the catalog", () => {
  const answer = (err: GatewayError) => {
    const a = anthropicErrorAnswer(err);
    return { status: a.status, ...JSON.parse(a.body).error };
  };
  test("each catalog status as Anthropic's type; the catalog's code in details", () => {
    assert.deepEqual(answer(new GatewayError("invalid_api_key")), {
      status: 401,
      type: "authentication_error",
      message: "Incorrect API key provided.",
      details: { error_code: "invalid_api_key" },
    });
    const expected: [ConstructorParameters<typeof GatewayError>[0], number, string][] = [
      ["key_disabled", 403, "permission_error"],
      ["model_not_found", 404, "not_found_error"],
      ["rate_limited_requests", 429, "rate_limit_error"],
      ["quota_exceeded", 429, "rate_limit_error"],
      ["request_too_large", 413, "invalid_request_error"],
      ["unsupported_media_type", 415, "invalid_request_error"],
      ["upstream_rate_limited", 529, "overloaded_error"],
      ["upstream_error", 502, "api_error"],
      ["upstream_timeout", 504, "timeout_error"],
      ["store_unavailable", 503, "api_error"],
      ["internal_error", 500, "api_error"],
    ];
    for (const [name, status, type] of expected) {
      const a = answer(new GatewayError(name));
      assert.equal(a.status, status, name);
      assert.equal(a.type, type, name);
    }
  });
});

const CONTEXT = { requestId: "req_abc", model: "public", startedAt: 0 };
const chunk = (
  delta: Record<string, unknown>,
  finish: Chunk["choices"][number]["finish_reason"] = null,
): Chunk => ({
  object: "chat.completion.chunk",
  choices: [{ index: 0, delta, finish_reason: finish }],
});
const END: StreamEnd = {
  usage: { prompt: 20, completion: 7, cachedInput: 5, cacheWrite: 3, reasoning: 0, reported: undefined },
  withheld: undefined,
  choices: new Set([0]),
};
const types = (events: readonly { event?: string | undefined; data: string }[]) =>
  events.map((e) => {
    const data = JSON.parse(e.data);
    assert.equal(e.event, data.type, "named as its type");
    return data.type === "content_block_delta" ? `${data.delta.type}@${data.index}` : data.type;
  });

describe("the stream renderer", () => {
  test("translated: thinking, text and two tool calls as blocks in order; the end after the record", () => {
    const s = new MessagesStream(CONTEXT);
    const events = [
      ...s.chunk(chunk({ role: "assistant", content: "" })),
      ...s.chunk(chunk({ reasoning_content: "hmm" })),
      ...s.chunk(chunk({ content: "Let me look." })),
      ...s.chunk(chunk({ tool_calls: [{ index: 0, id: "c1", function: { name: "a", arguments: "" } }] })),
      ...s.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"x":' } }] })),
      ...s.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: "1}" } }] })),
      ...s.chunk(chunk({ tool_calls: [{ index: 1, id: "c2", function: { name: "b", arguments: "{}" } }] })),
      ...s.chunk(chunk({}, "tool_calls")),
      ...s.finish(END),
    ];
    assert.deepEqual(types(events), [
      "message_start",
      "ping",
      "content_block_start",
      "thinking_delta@0",
      "content_block_stop",
      "content_block_start",
      "text_delta@1",
      "content_block_stop",
      "content_block_start",
      "input_json_delta@2",
      "input_json_delta@2",
      "content_block_stop",
      "content_block_start",
      "input_json_delta@3",
      "content_block_stop",
    ]);
    const start = JSON.parse(events[0]!.data).message;
    assert.equal(start.id, "msg_abc");
    assert.equal(start.model, "public");
    assert.deepEqual(JSON.parse(events.find((e) => e.data.includes('"tool_use"'))!.data).content_block, {
      type: "tool_use",
      id: "c1",
      name: "a",
      input: {},
    });
    const done = s.done().map((e) => JSON.parse(e.data));
    assert.deepEqual(done, [
      {
        type: "message_delta",
        delta: { stop_reason: "tool_use", stop_sequence: null },
        usage: {
          input_tokens: 12,
          cache_creation_input_tokens: 3,
          cache_read_input_tokens: 5,
          output_tokens: 7,
        },
      },
      { type: "message_stop" },
    ]);
  });

  test("translated, withheld: the open block ends, the stop reason is refusal with the safety extension", () => {
    const s = new MessagesStream(CONTEXT);
    s.chunk(chunk({ role: "assistant", content: "Hello" }));
    const outcome = { flagged: true, categories: ["x"], reviewer: "rules", ms: 1 };
    assert.deepEqual(types(s.finish({ ...END, withheld: outcome })), ["content_block_stop"]);
    const delta = JSON.parse(s.done()[0]!.data);
    assert.equal(delta.delta.stop_reason, "refusal");
    assert.deepEqual(delta.safety, { verdict: "flagged", stage: "output", categories: ["x"] });
  });

  test("native: the upstream's events restamped and passed on; its message_delta and message_stop wait for the record", () => {
    const s = new MessagesStream(CONTEXT);
    const native = (data: Record<string, unknown>) => ({ event: data.type as string, data });
    const carrier = (events: ReturnType<typeof native>[]): Chunk => ({
      object: "chat.completion.chunk",
      choices: [],
      native: events,
    });
    const delta = {
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { output_tokens: 9 },
    };
    const events = [
      ...s.chunk({
        ...chunk({ role: "assistant", content: "" }),
        native: [
          native({
            type: "message_start",
            message: { id: "msg_upstream", model: "claude-x", usage: { input_tokens: 3 } },
          }),
          native({
            type: "content_block_start",
            index: 0,
            content_block: { type: "thinking", thinking: "", signature: "" },
          }),
        ],
      }),
      ...s.chunk(
        carrier([
          native({
            type: "content_block_delta",
            index: 0,
            delta: { type: "signature_delta", signature: "S1g==" },
          }),
        ]),
      ),
      ...s.chunk(carrier([native({ type: "content_block_stop", index: 0 }), native(delta)])),
      ...s.chunk(carrier([native({ type: "message_stop" })])),
      ...s.finish(END),
    ];
    assert.deepEqual(types(events), [
      "message_start",
      "content_block_start",
      "signature_delta@0",
      "content_block_stop",
    ]);
    const start = JSON.parse(events[0]!.data).message;
    assert.deepEqual(start, { id: "msg_abc", model: "public", usage: { input_tokens: 3 } });
    assert.equal(JSON.parse(events[2]!.data).delta.signature, "S1g==", "signatures pass unchanged");
    assert.deepEqual(
      s.done().map((e) => JSON.parse(e.data)),
      [delta, { type: "message_stop" }],
    );
  });
});
