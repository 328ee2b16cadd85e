// The Messages edge alone: the translation into the canonical request, the error mapping from
// the catalog, and the stream renderer for translated and native answers.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Chunk } from "../../domain/completion.ts";
import { GatewayError } from "../../errors/index.ts";
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
    assert.deepEqual(canonicalRequest(req).request, {
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
    const canonical = canonicalRequest(req).request;
    assert.deepEqual(canonical.messages[0], {
      role: "user",
      content: [
        { type: "image_url", image_url: { url: "https://example.com/a.png" } },
        { type: "text", text: "what?" },
      ],
    });
    assert.deepEqual(canonical.tool_choice, { type: "function", function: { name: "w" } });
    assert.equal(
      canonicalRequest(parse({ ...req, tool_choice: { type: "none" } })).request.tool_choice,
      "none",
    );
  });
});

// What today's clients send that the gateway reads or carries (fixtures of the real clients
// are in test/agents/): nothing of it is refused; what has no counterpart is listed, by its
// place, for a translation to drop with a notice.
describe("forward compatibility", () => {
  test("a mid-conversation system turn is a system message in its place", () => {
    const { request, untranslated } = canonicalRequest(
      parse({
        messages: [
          { role: "user", content: "hi" },
          { role: "system", content: [{ type: "text", text: "The date is today." }] },
          { role: "user", content: "go on" },
        ],
      }),
    );
    assert.deepEqual(request.messages, [
      { role: "user", content: "hi" },
      { role: "system", content: "The date is today." },
      { role: "user", content: "go on" },
    ]);
    assert.deepEqual(untranslated, []);
  });

  test("adaptive thinking with an effort, and structured output: a reasoning effort and a response_format", () => {
    const { request, untranslated } = canonicalRequest(
      parse({
        messages: [{ role: "user", content: "hi" }],
        thinking: { type: "adaptive" },
        output_config: { effort: "max", format: { type: "json_schema", schema: { type: "object" } } },
      }),
    );
    assert.equal(request.reasoning_effort, "high");
    assert.deepEqual(request.response_format, {
      type: "json_schema",
      json_schema: { name: "output", schema: { type: "object" }, strict: true },
    });
    assert.deepEqual(untranslated, []);
    const unknownEffort = canonicalRequest(
      parse({ messages: [{ role: "user", content: "hi" }], output_config: { effort: "xhigh" } }),
    );
    assert.deepEqual(unknownEffort.untranslated, [
      { param: "output_config.effort", name: "effort", capability: "effort_unsupported" },
    ]);
  });

  test("unknown fields, blocks, server tools and tool fields pass validation and are listed by place", () => {
    const body = {
      model: "m",
      max_tokens: 10,
      top_k: 5,
      safeguards: { mode: "auto" },
      metadata: { user_id: JSON.stringify({ device_id: "d".repeat(64), session_id: "s" }) },
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "x", citations: null },
            { type: "document", source: { type: "url", url: "https://example.com/a.pdf" } },
            { type: "document", source: { type: "text", media_type: "text/plain", data: "the doc" } },
            {
              type: "search_result",
              source: "https://s",
              title: "T",
              content: [{ type: "text", text: "found" }],
            },
          ],
        },
        {
          role: "assistant",
          content: [{ type: "server_tool_use", id: "s1", name: "web_search", input: {} }],
        },
      ],
      tools: [
        { name: "Bash", input_schema: { type: "object" }, eager_input_streaming: true, defer_loading: false },
        { type: "web_search_20250305", name: "web_search", max_uses: 3 },
      ],
    };
    const { request, untranslated } = canonicalRequest(parseBody(messagesRequestSchema, body));
    assert.deepEqual(untranslated, [
      { param: "messages.0.content.1", name: "document", capability: "document_block" },
      { param: "messages.1.content.0", name: "server_tool_use" },
      { param: "tools.0.eager_input_streaming", name: "eager_input_streaming" },
      { param: "tools.0.defer_loading", name: "defer_loading" },
      { param: "tools.1", name: "web_search_20250305" },
      { param: "top_k", name: "top_k" },
      { param: "safeguards", name: "safeguards" },
    ]);
    assert.deepEqual(request.messages[0], {
      role: "user",
      content: "x\nthe doc\nT — https://s\nfound",
    });
    assert.equal(request.tools?.length, 1);
    assert.equal(request.user, body.metadata.user_id);
  });

  test("a PDF document is a file part", () => {
    const { request } = canonicalRequest(
      parse({
        messages: [
          {
            role: "user",
            content: [
              {
                type: "document",
                title: "r.pdf",
                source: { type: "base64", media_type: "application/pdf", data: "JVBERi0=" },
              },
              { type: "text", text: "summarise" },
            ],
          },
        ],
      }),
    );
    assert.deepEqual(request.messages[0]!.content, [
      { type: "file", file: { file_data: "data:application/pdf;base64,JVBERi0=", filename: "r.pdf" } },
      { type: "text", text: "summarise" },
    ]);
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
    [
      "a block of a known type, malformed",
      { ...ok, messages: [{ role: "user", content: [{ type: "image", source: { type: "url" } }] }] },
      "messages.0.content.0.source.url: Field required",
      "messages.0.content.0.source.url",
    ],
    [
      "a block without a type",
      { ...ok, messages: [{ role: "user", content: [{ text: "x" }] }] },
      "messages.0.content.0.type: Field required",
      "messages.0.content.0.type",
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
      ["request_too_large", 413, "request_too_large"],
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

  test("translated, withheld: the open block ends, the notice follows as a text block, the turn ends end_turn", () => {
    // Not `refusal`: Claude Code words a refusal as Anthropic's usage policy, blaming the vendor.
    const s = new MessagesStream(CONTEXT);
    s.chunk(chunk({ role: "assistant", content: "Hello" }));
    const outcome = { flagged: true, categories: ["x"], reviewer: "rules", ms: 1 };
    const events = s.finish({ ...END, withheld: outcome });
    assert.deepEqual(types(events), [
      "content_block_stop",
      "content_block_start",
      "text_delta@1",
      "content_block_stop",
    ]);
    const notice = JSON.parse(events[2]!.data).delta.text;
    assert.match(notice, /^This gateway's content policy withheld this answer \(request req_abc\)/);
    const delta = JSON.parse(s.done()[0]!.data);
    assert.equal(delta.delta.stop_reason, "end_turn");
    assert.deepEqual(delta.safety, { verdict: "flagged", stage: "output", categories: ["x"] });
  });

  test("translated: message_start says the prompt as begin() learnt it; message_delta the final figures", async () => {
    const s = new MessagesStream(CONTEXT);
    const first = chunk({ role: "assistant", content: "Hi" });
    let asked = 0;
    await s.begin(first, async () => {
      asked++;
      return { prompt: 40, completion: 0, cachedInput: 10, cacheWrite: 5, reasoning: 0 };
    });
    assert.equal(asked, 1);
    const start = JSON.parse(s.chunk(first)[0]!.data).message;
    assert.deepEqual(start.usage, {
      input_tokens: 25,
      cache_creation_input_tokens: 5,
      cache_read_input_tokens: 10,
      output_tokens: 0,
    });
    s.finish(END);
    assert.deepEqual(JSON.parse(s.done()[0]!.data).usage, {
      input_tokens: 12,
      cache_creation_input_tokens: 3,
      cache_read_input_tokens: 5,
      output_tokens: 7,
    });
  });

  test("native: begin() asks for no count (the upstream's message_start says it); a withheld answer's notice comes after its blocks", async () => {
    const s = new MessagesStream(CONTEXT);
    const first: Chunk = {
      ...chunk({ role: "assistant", content: "" }),
      native: [
        { event: "message_start", data: { type: "message_start", message: { usage: { input_tokens: 3 } } } },
        {
          event: "content_block_start",
          data: { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
        },
      ],
    };
    await s.begin(first, () => assert.fail("a native stream is not counted"));
    s.chunk(first);
    const outcome = { flagged: true, categories: ["x"], reviewer: "rules", ms: 1 };
    const events = s.finish({ ...END, withheld: outcome });
    assert.deepEqual(types(events), [
      "content_block_stop",
      "content_block_start",
      "text_delta@1",
      "content_block_stop",
    ]);
    assert.equal(JSON.parse(s.done()[0]!.data).delta.stop_reason, "end_turn");
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
