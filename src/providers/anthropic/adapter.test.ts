// The Anthropic adapter against the examples of Anthropic's own reference (./fixtures, sources
// in its README), served byte for byte, against the errors Anthropic answers, and the request
// translation alone.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import {
  drain,
  finishReasons,
  json,
  recordingServerForTests,
  sse,
  textOf,
} from "../../../test/support/adapter-kit.ts";
import { parseChatRequest } from "../../domain/chat-request.ts";
import { GatewayError } from "../../errors/index.ts";
import { UpstreamError } from "../../errors/upstream-error.ts";
import { DEFAULT_PROMPT_OVERHEADS, promptUpperBound } from "../prompt-bound.ts";
import type { Provider, UpstreamCall } from "../types.ts";
import { anthropicConfig, DEFAULT_DENIED } from "./config.ts";
import { anthropic } from "./index.ts";
import {
  anthropicPromptBound,
  messagesBody,
  nativeMessagesBody,
  TOOL_PROMPT_TOKENS,
  thinkingBudget,
} from "./request.ts";

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url));
const KEY = "sk-ant-test-0123456789";

const upstream = recordingServerForTests();

function provider(fields: Record<string, unknown> = {}): Provider {
  const config = anthropicConfig.parse({
    type: "anthropic",
    id: "claude",
    base_url: upstream.server.origin,
    api_key_env: "KEY",
    ...fields,
  });
  const p = anthropic.create(config, { KEY });
  return upstream.track(p);
}

const call = (fields: Record<string, unknown> = {}, outputBound = 1024): UpstreamCall => ({
  request: parseChatRequest({ model: "claude", messages: [{ role: "user", content: "Hello" }], ...fields }),
  upstreamModel: "claude-sonnet-4-5",
  outputBound,
  signal: new AbortController().signal,
});

describe("the reference's examples", () => {
  test("basic stream: role first, the text, stop; usage from message_start and the last message_delta", async () => {
    upstream.server.answer = sse(fixture("docs-basic-stream.sse"));
    const { chunks, error } = await drain(provider().stream(call({ stream: true })));
    assert.equal(error, undefined);
    assert.equal(textOf(chunks), "Hello!");
    assert.deepEqual(chunks[0]!.choices[0]!.delta, { role: "assistant", content: "" });
    assert.equal(chunks[0]!.id, "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY");
    assert.deepEqual(finishReasons(chunks), ["stop"]);
    const last = chunks.at(-1)!;
    assert.deepEqual(last.choices, []);
    assert.deepEqual(last.usage, {
      prompt: 25,
      completion: 15,
      cachedInput: 0,
      cacheWrite: 0,
      reasoning: 0,
      details: { prompt_tokens_details: { cached_tokens: 0 } },
    });
    const req = upstream.server.received[0]!;
    assert.equal(req.url, "/v1/messages");
    assert.equal(req.headers["x-api-key"], KEY);
    assert.equal(req.headers["anthropic-version"], "2023-06-01");
    assert.equal(req.headers.authorization, undefined);
  });

  test("tool use stream: the text, then the call indexed 0 with its id, name and arguments put together", async () => {
    upstream.server.answer = sse(fixture("docs-tool-use-stream.sse"));
    const { chunks, error } = await drain(provider().stream(call({ stream: true })));
    assert.equal(error, undefined);
    assert.equal(textOf(chunks), "Okay, let's check the weather for San Francisco, CA:");
    const deltas = chunks.flatMap((c) => (c.choices[0]?.delta.tool_calls as any[]) ?? []);
    assert.ok(deltas.every((d) => d.index === 0));
    assert.equal(deltas[0].id, "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
    assert.equal(deltas[0].function.name, "get_weather");
    const args = deltas.map((d) => d.function.arguments).join("");
    assert.deepEqual(JSON.parse(args), { location: "San Francisco, CA", unit: "fahrenheit" });
    assert.equal(chunks.at(-2)!.choices[0]!.finish_reason, "tool_calls");
    assert.equal(chunks.at(-1)!.usage?.prompt, 472);
    assert.equal(chunks.at(-1)!.usage?.completion, 89);
  });

  test("thinking stream: the thinking is not content; no usage in it means none reported (the relay estimates)", async () => {
    upstream.server.answer = sse(fixture("docs-thinking-stream.sse"));
    const { chunks, error } = await drain(provider().stream(call({ stream: true })));
    assert.equal(error, undefined);
    assert.equal(textOf(chunks), "27 * 453 = 12,231");
    assert.equal(chunks.at(-1)!.usage, undefined);
  });

  test("an overloaded error event before any content: nothing yielded, a retryable 529 failure", async () => {
    upstream.server.answer = sse(fixture("docs-overloaded-error.sse"));
    const { chunks, error } = await drain(provider().stream(call({ stream: true })));
    assert.equal(chunks.length, 0, "no chunk before content: the failure is still an ordinary one");
    assert.ok(error instanceof UpstreamError);
    assert.equal(error.status, 529);
    assert.equal(error.retryable, true);
    assert.equal(error.message, "the upstream reported an error (overloaded_error): Overloaded");
  });

  test("a stream cut before message_stop is a network failure", async () => {
    const cut = fixture("docs-basic-stream.sse").toString("utf8").split("event: message_delta")[0]!;
    upstream.server.answer = sse(cut);
    const { chunks, error } = await drain(provider().stream(call({ stream: true })));
    assert.equal(textOf(chunks), "Hello!");
    assert.ok(error instanceof UpstreamError);
    assert.equal(error.failure, "network");
  });

  test("the Message example as a chat.completion", async () => {
    upstream.server.answer = (res) =>
      res.writeHead(200, { "content-type": "application/json" }).end(fixture("docs-message.json"));
    const completion = await provider().complete(call());
    assert.deepEqual(completion.choices, [
      {
        index: 0,
        message: { role: "assistant", content: "Hi! My name is Claude.", refusal: null },
        logprobs: null,
        finish_reason: "stop",
      },
    ]);
    assert.equal(completion.usage?.prompt, 2095);
    assert.equal(completion.usage?.completion, 503);
  });
});

describe("errors", () => {
  const body = (type: string, message: string, details?: unknown) => ({
    type: "error",
    error: { type, message, ...(details ? { details } : {}) },
    request_id: "req_011CSHoEeqs5C35K2UUqR7Fy",
  });

  test("429 is retryable after its retry-after; 529 is retryable", async () => {
    upstream.server.answer = json(429, body("rate_limit_error", "Your account has hit a rate limit."), {
      "retry-after": "4",
    });
    await assert.rejects(provider().complete(call()), (err: UpstreamError) => {
      assert.equal(err.status, 429);
      assert.equal(err.retryable, true);
      assert.equal(err.retryAfterMs, 4000);
      return true;
    });
    upstream.server.answer = json(529, body("overloaded_error", "Overloaded"));
    await assert.rejects(
      provider().complete(call()),
      (err: UpstreamError) => err.retryable && err.status === 529,
    );
  });

  test("a 429 for a reached spend limit is not retryable", async () => {
    upstream.server.answer = json(
      429,
      body("rate_limit_error", "You have reached your specified API usage limits.", {
        error_code: "enforced_spend_limit_reached",
      }),
    );
    await assert.rejects(provider().complete(call()), (err: UpstreamError) => {
      assert.equal(err.status, 429);
      assert.equal(err.retryable, false);
      return true;
    });
  });

  test("401 and 403 are a refused key; 400 carries Anthropic's reason", async () => {
    for (const [status, type] of [
      [401, "authentication_error"],
      [403, "permission_error"],
    ] as const) {
      upstream.server.answer = json(status, body(type, "invalid x-api-key"));
      await assert.rejects(provider().complete(call()), (err: UpstreamError) => err.refused === "key");
    }
    upstream.server.answer = json(
      400,
      body("invalid_request_error", "messages.0.role: Input should be 'user' or 'assistant'"),
    );
    await assert.rejects(provider().complete(call()), (err: UpstreamError) => {
      assert.equal(err.status, 400);
      assert.equal(err.retryable, false);
      assert.equal(err.detail?.message, "messages.0.role: Input should be 'user' or 'assistant'");
      return true;
    });
  });
});

describe("the request", () => {
  test("a refused field throws as the stream is asked for: nothing is sent", async () => {
    assert.throws(
      () => provider({ strict: true }).stream(call({ stream: true, n: 3 })),
      (err: GatewayError) => err.errorName === "invalid_request" && err.param === "n",
    );
    await assert.rejects(
      provider({ strict: true }).complete(call({ logit_bias: { "50256": -100 } })),
      GatewayError,
    );
    assert.equal(upstream.server.received.length, 0);
  });

  test("tool results open their user turn; a user message after them follows", () => {
    const body = messagesBody(
      call({
        messages: [
          { role: "user", content: "weather?" },
          {
            role: "assistant",
            content: "Let me look.",
            tool_calls: [
              { id: "toolu_1", type: "function", function: { name: "w", arguments: '{"c":"P"}' } },
            ],
          },
          { role: "tool", tool_call_id: "toolu_1", content: [{ type: "text", text: "sunny" }] },
          { role: "user", content: "and tomorrow?" },
        ],
      }),
      false,
      false,
    );
    assert.deepEqual(body.messages, [
      { role: "user", content: [{ type: "text", text: "weather?" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Let me look." },
          { type: "tool_use", id: "toolu_1", name: "w", input: { c: "P" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "sunny" }] },
          { type: "text", text: "and tomorrow?" },
        ],
      },
    ]);
  });

  test("thinking: a budget within the bound; left out while a tool loop is under way", () => {
    assert.equal(thinkingBudget("minimal", 8000), 1024);
    assert.equal(thinkingBudget("low", 8000), 2000);
    assert.equal(thinkingBudget("high", 8000), 6400);
    assert.equal(thinkingBudget("none", 8000), undefined);
    const loop = call(
      {
        reasoning_effort: "high",
        messages: [
          { role: "user", content: "weather?" },
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "toolu_1", type: "function", function: { name: "w", arguments: "{}" } }],
          },
          { role: "tool", tool_call_id: "toolu_1", content: "sunny" },
        ],
      },
      8000,
    );
    assert.equal("thinking" in messagesBody(loop, false, true), false);
  });

  test("what Anthropic cannot take is refused with its param: bad arguments, audio, function messages", () => {
    const refusedParam = (fields: Record<string, unknown>) => {
      try {
        messagesBody(call(fields), false, true);
      } catch (err) {
        assert.ok(err instanceof GatewayError);
        return err.param;
      }
      assert.fail("not refused");
    };
    assert.equal(
      refusedParam({
        messages: [
          { role: "user", content: "x" },
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "t", type: "function", function: { name: "w", arguments: "[1" } }],
          },
        ],
      }),
      "messages[1].tool_calls[0].function.arguments",
    );
    assert.equal(
      refusedParam({
        messages: [
          { role: "user", content: [{ type: "input_audio", input_audio: { data: "x", format: "wav" } }] },
        ],
      }),
      "messages[0].content[0]",
    );
    assert.equal(
      refusedParam({ messages: [{ role: "function", name: "f", content: "1" }] }),
      "messages[0].role",
    );
    assert.equal(refusedParam({ tools: [{ type: "web_search" }] }), "tools[0]");
    assert.equal(refusedParam({ reasoning_effort: "extreme" }), "reasoning_effort");
  });

  test("a custom tool goes as a tool of one string argument; its earlier calls as tool_use blocks", () => {
    const body = messagesBody(
      call({
        tools: [{ type: "custom", custom: { name: "apply_patch", description: "Edit files" } }],
        messages: [
          { role: "user", content: "x" },
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "t", type: "custom", custom: { name: "apply_patch", input: "*** Begin" } }],
          },
          { role: "tool", tool_call_id: "t", content: "Done" },
        ],
      }),
      false,
      false,
    ) as any;
    assert.equal(body.tools[0].name, "apply_patch");
    assert.deepEqual(body.tools[0].input_schema.required, ["input"]);
    assert.deepEqual(body.messages[1].content[0], {
      type: "tool_use",
      id: "t",
      name: "apply_patch",
      input: { input: "*** Begin" },
    });
  });

  test("the prompt bound adds Anthropic's tool-use system prompt when there are tools", () => {
    const plain = call().request;
    const withTools = call({ tools: [{ type: "function", function: { name: "w" } }] }).request;
    const o = { ...DEFAULT_PROMPT_OVERHEADS };
    assert.equal(anthropicPromptBound(plain, o), promptUpperBound(plain, o));
    assert.equal(anthropicPromptBound(withTools, o), promptUpperBound(withTools, o) + TOOL_PROMPT_TOKENS);
  });
});

describe("a Messages API client's call, sent natively", () => {
  const messagesBody = {
    model: "claude",
    max_tokens: 4000,
    system: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }],
    thinking: { type: "enabled", budget_tokens: 3000 },
    context_management: { edits: [] },
    messages: [
      { role: "user", content: "Hello" },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "Thought about it.", signature: "c2lnbmF0dXJl" },
          { type: "redacted_thinking", data: "b3BhcXVl" },
          { type: "text", text: "Hi" },
        ],
      },
      { role: "user", content: "Again" },
    ],
  };
  const nativeCall = (
    outputBound = 4000,
    betas = "claude-code-20250219, oauth-2025-04-20,claude-code-20250219",
  ) => ({
    ...call({}, outputBound),
    native: { api: "messages" as const, body: messagesBody, headers: { "anthropic-beta": betas } },
  });

  const settings = (strict = false) => ({ strict, deny: [...DEFAULT_DENIED] });

  test("the body as it came, with the call's model and bound; betas but the denied; a beta field without its flag left out", () => {
    const c = nativeCall();
    const { body, betas } = nativeMessagesBody(c, c.native, true, settings());
    assert.equal(betas, "claude-code-20250219");
    // each denied flag and each field left out is noted for the client's x-gateway-dropped
    assert.deepEqual((c as UpstreamCall).dropped, [
      "anthropic-beta (oauth-2025-04-20)",
      "context_management",
    ]);
    assert.equal(body.model, "claude-sonnet-4-5");
    assert.equal(body.max_tokens, 4000);
    assert.equal(body.stream, true);
    assert.equal("context_management" in body, false);
    assert.deepEqual(body.system, messagesBody.system);
    assert.deepEqual(body.messages, messagesBody.messages);
    assert.deepEqual(body.thinking, messagesBody.thinking);
    const withFlag = nativeMessagesBody(
      nativeCall(4000, "context-management-2025-06-27"),
      nativeCall(4000, "context-management-2025-06-27").native,
      false,
      settings(),
    );
    assert.deepEqual(withFlag.body.context_management, { edits: [] });
    assert.equal("stream" in withFlag.body, false);
    const none = nativeCall(4000, "");
    assert.equal(nativeMessagesBody(none, none.native, false, settings()).betas, undefined);
    // strict: a denied flag refuses the call, worded for Claude Code's recovery
    assert.throws(
      () => nativeMessagesBody(nativeCall(), nativeCall().native, false, settings(true)),
      (err: GatewayError) =>
        err.capability === "beta_header:oauth-2025-04-20" && err.param === "anthropic-beta",
    );
  });

  test("a thinking budget the reserved bound no longer fits is cut below it, or left out under the minimum", () => {
    const cut = nativeMessagesBody(nativeCall(2000), nativeCall(2000).native, false, settings());
    assert.deepEqual(cut.body.thinking, { type: "enabled", budget_tokens: 1999 });
    const none = nativeMessagesBody(nativeCall(1000), nativeCall(1000).native, false, settings());
    assert.equal("thinking" in none.body, false);
  });

  test("the prompt bound covers the thinking the native body carries beyond the canonical request", () => {
    const o = { ...DEFAULT_PROMPT_OVERHEADS };
    const c = nativeCall();
    const bound = anthropicPromptBound(c.request, o, c.native);
    assert.ok(
      bound >=
        anthropicPromptBound(c.request, o) +
          Buffer.byteLength("Thought about it.") +
          Buffer.byteLength("b3BhcXVl"),
    );
    assert.ok(bound >= Buffer.byteLength(JSON.stringify(c.native.body)), "every byte of the body it sends");
    // a block the gateway does not translate (a document) is in the bound all the same
    const withDocument = {
      ...c.native,
      body: {
        ...c.native.body,
        messages: [
          {
            role: "user",
            content: [
              {
                type: "document",
                source: { type: "text", media_type: "text/plain", data: "d".repeat(5000) },
              },
            ],
          },
        ],
      },
    };
    assert.ok(anthropicPromptBound(c.request, o, withDocument) >= 5000 + o.file);
  });

  test("stream: every upstream event handed on in order with the chunks; none before the first block", async () => {
    upstream.server.answer = sse(fixture("docs-thinking-stream.sse"));
    const { chunks, error } = await drain(provider().stream(nativeCall()));
    assert.equal(error, undefined);
    const sent = upstream.server.received.at(-1)!;
    assert.equal(sent.headers["anthropic-beta"], "claude-code-20250219");
    assert.deepEqual((sent.body as any).messages, messagesBody.messages);
    const names = chunks.flatMap((c) => (c.native ?? []).map((e) => e.event));
    const upstreamNames = [
      ...fixture("docs-thinking-stream.sse")
        .toString("utf8")
        .matchAll(/^event: (\w+)$/gm),
    ].map((m) => m[1]);
    assert.deepEqual(names, upstreamNames);
    assert.deepEqual(
      chunks[0]!.native!.map((e) => e.event),
      ["message_start", "content_block_start"],
      "the first chunk carries what came before it",
    );
    // thinking is canonical as reasoning, for review and estimates
    const reasoning = chunks.map((c) => c.choices[0]?.delta.reasoning_content ?? "").join("");
    assert.match(reasoning, /^Let me solve this step by step/);
    assert.equal(textOf(chunks), "27 * 453 = 12,231");

    upstream.server.answer = sse(fixture("docs-overloaded-error.sse"));
    const overloaded = await drain(provider().stream(nativeCall()));
    assert.equal(overloaded.chunks.length, 0, "an error after message_start is still an ordinary failure");
    assert.ok(overloaded.error instanceof UpstreamError);
  });

  test("JSON: the upstream's message beside the canonical completion", async () => {
    upstream.server.answer = (res) =>
      res.writeHead(200, { "content-type": "application/json" }).end(fixture("docs-message.json"));
    const completion = await provider().complete(nativeCall());
    assert.deepEqual(completion.native, JSON.parse(fixture("docs-message.json").toString("utf8")));
    assert.equal(completion.choices[0]!.message.content, "Hi! My name is Claude.");
    assert.equal("stream" in (upstream.server.received.at(-1)!.body as object), false);
  });
});
