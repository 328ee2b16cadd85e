// The Gemini adapter against GenerateContentResponses as the reference describes them
// (./fixtures, sources in its README), its errors, and the request translation alone.
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
import type { GatewayError } from "../../errors/index.ts";
import { UpstreamError } from "../../errors/upstream-error.ts";
import type { Provider, UpstreamCall } from "../types.ts";
import { geminiConfig } from "./config.ts";
import { gemini } from "./index.ts";
import {
  geminiBodyBound,
  geminiSchema,
  generateBody,
  nativeCountBody,
  nativeGenerateBody,
  thinkingBudget,
} from "./request.ts";
import { answerPrefix, thoughtSignatureOf, toolCallId } from "./tool-ids.ts";

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url));
const KEY = "AIzaTest0123456789";

const upstream = recordingServerForTests();

function provider(fields: Record<string, unknown> = {}): Provider {
  const p = gemini.create(
    geminiConfig.parse({
      type: "gemini",
      id: "gem",
      base_url: upstream.server.origin,
      api_key_env: "KEY",
      ...fields,
    }),
    { KEY },
  );
  return upstream.track(p);
}

const call = (fields: Record<string, unknown> = {}, outputBound = 1024): UpstreamCall => ({
  request: parseChatRequest({ model: "gem", messages: [{ role: "user", content: "Hello" }], ...fields }),
  upstreamModel: "gemini-2.5-flash",
  outputBound,
  signal: new AbortController().signal,
});

describe("answers", () => {
  test("parallel function calls: two tool calls, the first carrying its signature in its id; thinking billed as output", async () => {
    upstream.server.answer = (res) =>
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(fixture("docs-parallel-function-calls.json"));
    const completion = await provider().complete(call());
    const choice = completion.choices[0]!;
    assert.equal(choice.finish_reason, "tool_calls");
    assert.equal(choice.message.content, null);
    const calls = choice.message.tool_calls as {
      id: string;
      function: { name: string; arguments: string };
    }[];
    assert.deepEqual(
      calls.map((c) => c.function),
      [
        { name: "get_current_temperature", arguments: '{"location":"Paris"}' },
        { name: "get_current_temperature", arguments: '{"location":"London"}' },
      ],
    );
    assert.equal(thoughtSignatureOf(calls[0]!.id), "<Signature_A>");
    assert.equal(thoughtSignatureOf(calls[1]!.id), undefined);
    assert.notEqual(calls[0]!.id, calls[1]!.id);
    assert.deepEqual(completion.usage, {
      prompt: 72,
      completion: 150,
      cachedInput: 0,
      cacheWrite: 0,
      reasoning: 120,
      details: {
        prompt_tokens_details: { cached_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 120 },
      },
    });
    const req = upstream.server.received[0]!;
    assert.equal(req.url, "/v1beta/models/gemini-2.5-flash:generateContent");
    assert.equal(req.headers["x-goog-api-key"], KEY);
  });

  test("a stream: role first, the text, stop; the last running usage, not a sum", async () => {
    upstream.server.answer = sse(fixture("stream-text-thinking.sse"));
    const { chunks, error } = await drain(provider().stream(call({ stream: true })));
    assert.equal(error, undefined);
    assert.equal(
      upstream.server.received[0]!.url,
      "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    );
    assert.equal(textOf(chunks), "The capital of France is Paris.");
    assert.equal(chunks[0]!.choices[0]!.delta.role, "assistant");
    assert.deepEqual(finishReasons(chunks), ["stop"]);
    const usage = chunks.at(-1)!.usage!;
    assert.deepEqual(
      [usage.prompt, usage.completion, usage.reasoning, usage.cachedInput],
      [8, 7 + 31, 31, 4],
    );
  });

  test("a stream that ends before its candidate finished is a network failure", async () => {
    upstream.server.answer = sse(
      `${fixture("stream-text-thinking.sse").toString("utf8").split("\n\n").slice(0, 2).join("\n\n")}\n\n`,
    );
    const { error } = await drain(provider().stream(call({ stream: true })));
    assert.ok(error instanceof UpstreamError);
    assert.equal(error.failure, "network");
  });

  test("a blocked prompt: one choice, content_filter, the prompt's usage", async () => {
    upstream.server.answer = (res) =>
      res.writeHead(200, { "content-type": "application/json" }).end(fixture("prompt-blocked.json"));
    const completion = await provider().complete(call());
    assert.equal(completion.choices.length, 1);
    assert.equal(completion.choices[0]!.finish_reason, "content_filter");
    assert.equal(completion.usage?.prompt, 9);
  });
});

describe("errors", () => {
  test("an unknown key (400 API_KEY_INVALID) is a refused key; 429 RESOURCE_EXHAUSTED is retryable", async () => {
    upstream.server.answer = json(400, {
      error: {
        code: 400,
        message: "API key not valid. Please pass a valid API key.",
        status: "INVALID_ARGUMENT",
        details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID" }],
      },
    });
    await assert.rejects(
      provider().complete(call()),
      (err: UpstreamError) => err.refused === "key" && !err.retryable,
    );
    upstream.server.answer = json(429, {
      error: { code: 429, message: "Resource has been exhausted", status: "RESOURCE_EXHAUSTED" },
    });
    await assert.rejects(
      provider().complete(call()),
      (err: UpstreamError) => err.retryable && err.status === 429,
    );
  });

  test("an error object inside a 200 stream takes its own code", async () => {
    upstream.server.answer = sse(
      `data: ${JSON.stringify({ error: { code: 503, message: "The model is overloaded.", status: "UNAVAILABLE" } })}\n\n`,
    );
    const { error } = await drain(provider().stream(call({ stream: true })));
    assert.ok(error instanceof UpstreamError);
    assert.equal(error.status, 503);
    assert.equal(error.retryable, true);
    assert.match(error.message, /UNAVAILABLE/);
  });
});

describe("a Gemini API client's body, sent natively", () => {
  const native = (body: Record<string, unknown>) => ({ api: "gemini" as const, body, headers: {} });
  test("the reserved bound as maxOutputTokens, in the client's spelling of generationConfig; the upstream's model", () => {
    assert.deepEqual(
      nativeGenerateBody(
        call({}, 300),
        native({
          model: "models/public",
          contents: [],
          generation_config: { max_output_tokens: 9999, top_k: 3 },
        }),
      ),
      {
        model: "models/gemini-2.5-flash",
        contents: [],
        generation_config: { top_k: 3, maxOutputTokens: 300 },
      },
    );
    assert.deepEqual(nativeGenerateBody(call({}, 300), native({ contents: [] })), {
      contents: [],
      generationConfig: { maxOutputTokens: 300 },
    });
    assert.deepEqual(
      nativeCountBody(native({ generateContentRequest: { contents: [] } }), "gemini-2.5-flash"),
      { generateContentRequest: { contents: [], model: "models/gemini-2.5-flash" } },
    );
  });
  test("its prompt bound: every byte, the turns, and each medium's bound beyond its bytes", () => {
    const o = { per_request: 10, per_message: 5, tools: 100, image: 1000, audio: 2000, file: 3000 };
    const body = {
      systemInstruction: { parts: [{ text: "s" }] },
      contents: [
        { role: "user", parts: [{ inline_data: { mime_type: "image/png", data: "AA==" } }] },
        { role: "user", parts: [{ fileData: { mimeType: "video/mp4", fileUri: "files/x" } }] },
      ],
      tools: [{ googleSearch: {} }],
    };
    const bytes = Buffer.byteLength(JSON.stringify(body));
    assert.equal(geminiBodyBound(body, o), 10 + bytes + 3 * 5 + 1000 + 3000 + 100);
  });
});

describe("the request", () => {
  test("tool-call ids carry any signature exactly, and name the call by its place", () => {
    const prefix = answerPrefix();
    for (const signature of ["<Signature_A>", "CiQBjz1rX+/==", "ünïcode"]) {
      const id = toolCallId(prefix, 3, signature);
      assert.match(id, /^call_[0-9a-f]{16}_3_ts_[A-Za-z0-9_-]+$/);
      assert.equal(thoughtSignatureOf(id), signature);
    }
    assert.equal(toolCallId(prefix, 0, undefined), `${prefix}_0`);
    assert.equal(thoughtSignatureOf("toolu_01T1x1fJ34qAmk2tNTrN7Up6"), undefined);
    assert.notEqual(answerPrefix(), prefix);
  });

  test("tool calls and results: functionCall with its signature, functionResponse by name, one turn", () => {
    const id = toolCallId(answerPrefix(), 0, "<Signature_A>");
    const body = generateBody(
      call({
        messages: [
          { role: "user", content: "temperatures?" },
          {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id,
                type: "function",
                function: { name: "get_current_temperature", arguments: '{"location":"Paris"}' },
              },
              {
                id: "call_b",
                type: "function",
                function: { name: "get_current_temperature", arguments: '{"location":"London"}' },
              },
            ],
          },
          { role: "tool", tool_call_id: id, content: '{"temp":"15C"}' },
          { role: "tool", tool_call_id: "call_b", content: "12C" },
        ],
      }),
      false,
    );
    assert.deepEqual(body.contents, [
      { role: "user", parts: [{ text: "temperatures?" }] },
      {
        role: "model",
        parts: [
          {
            functionCall: { name: "get_current_temperature", args: { location: "Paris" } },
            thoughtSignature: "<Signature_A>",
          },
          { functionCall: { name: "get_current_temperature", args: { location: "London" } } },
        ],
      },
      {
        role: "user",
        parts: [
          { functionResponse: { name: "get_current_temperature", response: { temp: "15C" } } },
          { functionResponse: { name: "get_current_temperature", response: { result: "12C" } } },
        ],
      },
    ]);
  });

  test("schemas keep Gemini's keywords only", () => {
    assert.deepEqual(
      geminiSchema({
        $schema: "https://json-schema.org/draft/2020-12/schema",
        type: "object",
        additionalProperties: false,
        properties: {
          a: { type: ["integer", "null"], minimum: 0 },
          b: { const: "x" },
          c: { type: "array", items: { type: "string", format: "date-time" } },
          d: { type: ["string", "number"] },
        },
        required: ["a"],
      }),
      {
        type: "object",
        properties: {
          a: { nullable: true, type: "integer", minimum: 0 },
          b: { enum: ["x"] },
          c: { type: "array", items: { type: "string", format: "date-time" } },
          d: { anyOf: [{ type: "string" }, { type: "number" }] },
        },
        required: ["a"],
      },
    );
  });

  test("thinking budgets stay within what every Gemini 2.5 model takes", () => {
    assert.equal(thinkingBudget("none", 4096), 0);
    assert.equal(thinkingBudget("minimal", 4096), 512);
    assert.equal(thinkingBudget("medium", 4096), 2048);
    assert.equal(thinkingBudget("high", 100_000), 24_576);
  });

  test("refused before anything is sent: a role Gemini lacks; in strict mode, parallel_tool_calls false", async () => {
    assert.throws(
      () => generateBody(call({ messages: [{ role: "function", name: "f", content: "1" }] }), false),
      (err: GatewayError) => err.param === "messages[0].role",
    );
    assert.throws(
      () => provider({ strict: true }).stream(call({ stream: true, parallel_tool_calls: false })),
      (err: GatewayError) => err.param === "parallel_tool_calls" && /Google Gemini/.test(err.message),
    );
    assert.equal(upstream.server.received.length, 0);
  });
});
