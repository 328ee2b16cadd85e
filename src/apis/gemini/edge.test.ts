// The Gemini edge alone: the translation into the canonical request, the error mapping from
// the catalog, the answer's usage, and the stream renderer for translated and native answers.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Chunk } from "../../domain/completion.ts";
import { GatewayError } from "../../errors/index.ts";
import type { AnswerUsage, StreamEnd } from "../types.ts";
import { usageMetadata } from "./answer.ts";
import { googleErrorBody, statusName } from "./errors.ts";
import { canonicalRequest, generateContentSchema, jsonSchemaOf, parseBody } from "./request.ts";
import { GeminiStream } from "./stream.ts";

const translate = (body: Record<string, unknown>) =>
  canonicalRequest(parseBody(generateContentSchema, body), "m", false);

function refusal(body: unknown): GatewayError {
  try {
    translate(body as Record<string, unknown>);
  } catch (err) {
    assert.ok(err instanceof GatewayError);
    return err;
  }
  assert.fail("the body was accepted");
}

const PNG = "iVBORw0KGgo=";

describe("the canonical request", () => {
  test("turns, function calls by id or place, their responses ahead of the turn's text, thoughts left out", () => {
    const { request, untranslated } = translate({
      systemInstruction: { parts: [{ text: "Be brief." }, { text: "Use tools." }] },
      contents: [
        {
          role: "user",
          parts: [
            { text: "Weather in Paris and Rome?" },
            { inlineData: { mimeType: "image/png", data: PNG } },
          ],
        },
        {
          role: "model",
          parts: [
            { text: "Let me check.", thought: true },
            { text: "Checking." },
            { functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "sig" },
            { functionCall: { id: "fc-2", name: "get_weather", args: { city: "Rome" } } },
            // a signature alone, as a model turn may end: nothing to carry, nothing to say
            { thoughtSignature: "sig-end" },
          ],
        },
        {
          role: "user",
          parts: [
            { functionResponse: { id: "fc-2", name: "get_weather", response: { temp: 20 } } },
            { functionResponse: { name: "get_weather", response: { temp: 15 } } },
            { text: "Thanks" },
          ],
        },
      ],
    });
    assert.deepEqual(request.messages, [
      { role: "system", content: "Be brief.\nUse tools." },
      {
        role: "user",
        content: [
          { type: "text", text: "Weather in Paris and Rome?" },
          { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
        ],
      },
      {
        role: "assistant",
        content: "Checking.",
        tool_calls: [
          {
            id: "call_1_2",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Paris"}' },
          },
          { id: "fc-2", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: "tool", tool_call_id: "fc-2", content: '{"temp":20}' },
      { role: "tool", tool_call_id: "call_1_2", content: '{"temp":15}' },
      { role: "user", content: "Thanks" },
    ]);
    assert.deepEqual(untranslated, []);
  });

  test("media: PDFs as files, text inline as text, WAV as audio; video and Google's file store are untranslated", () => {
    const { request, untranslated } = translate({
      contents: [
        {
          parts: [
            { inlineData: { mimeType: "application/pdf", data: "JVBE" } },
            { inline_data: { mime_type: "text/plain", data: Buffer.from("notes").toString("base64") } },
            { inlineData: { mimeType: "audio/wav", data: "UklG" } },
            { inlineData: { mimeType: "video/mp4", data: "AAAA" } },
            { fileData: { mimeType: "image/jpeg", fileUri: "https://example.com/a.jpg" } },
            {
              fileData: {
                mimeType: "application/pdf",
                fileUri: "https://generativelanguage.googleapis.com/v1beta/files/x",
              },
            },
          ],
        },
      ],
    });
    assert.deepEqual(request.messages[0]!.content, [
      { type: "file", file: { file_data: "data:application/pdf;base64,JVBE" } },
      { type: "text", text: "notes" },
      { type: "input_audio", input_audio: { data: "UklG", format: "wav" } },
      { type: "image_url", image_url: { url: "https://example.com/a.jpg" } },
    ]);
    assert.deepEqual(
      untranslated.map((u) => `${u.param} ${u.name}`),
      ["contents[0].parts[3] inlineData video/mp4", "contents[0].parts[5] fileData"],
    );
  });

  test("generation config: bounds, sampling, stops, candidates, JSON output, thinking; the rest untranslated", () => {
    const { request, untranslated } = translate({
      contents: [{ parts: [{ text: "hi" }] }],
      generationConfig: {
        maxOutputTokens: 1000,
        temperature: 0.3,
        topP: 0.9,
        topK: 20,
        stopSequences: ["END"],
        candidateCount: 2,
        seed: 7,
        responseMimeType: "application/json",
        responseSchema: {
          type: "OBJECT",
          properties: {
            a: { type: "STRING", nullable: true },
            b: { type: "ARRAY", items: { type: "INTEGER" } },
          },
          propertyOrdering: ["a", "b"],
        },
        thinkingConfig: { thinkingBudget: 400, includeThoughts: true },
        mediaResolution: "MEDIA_RESOLUTION_LOW",
      },
      safetySettings: [{ category: "HARM_CATEGORY_HATE_SPEECH", threshold: "BLOCK_NONE" }],
      cachedContent: "cachedContents/abc",
    });
    assert.equal(request.max_tokens, 1000);
    assert.equal(request.temperature, 0.3);
    assert.equal(request.top_p, 0.9);
    assert.deepEqual(request.stop, ["END"]);
    assert.equal(request.n, 2);
    assert.equal(request.seed, 7);
    assert.equal(request.reasoning_effort, "medium");
    assert.deepEqual(request.response_format, {
      type: "json_schema",
      json_schema: {
        name: "output",
        schema: {
          type: "object",
          properties: { a: { type: ["string", "null"] }, b: { type: "array", items: { type: "integer" } } },
        },
      },
    });
    assert.deepEqual(
      untranslated.map((u) => u.param),
      ["generationConfig.topK", "generationConfig.mediaResolution", "safetySettings", "cachedContent"],
    );
  });

  test("thinking: 0 is none, -1 the model's default, levels as efforts, a budget without a bound by its size", () => {
    const effort = (thinkingConfig: unknown, max?: number) =>
      translate({
        contents: [{ parts: [{ text: "hi" }] }],
        generationConfig: { thinkingConfig, ...(max ? { maxOutputTokens: max } : {}) },
      }).request.reasoning_effort;
    assert.equal(effort({ thinkingBudget: 0 }), "none");
    assert.equal(effort({ thinkingBudget: -1 }), undefined);
    assert.equal(effort({ thinkingLevel: "HIGH" }), "high");
    assert.equal(effort({ thinkingLevel: "low" }), "low");
    assert.equal(effort({ thinkingBudget: 24_000 }), "high");
    assert.equal(effort({ thinkingBudget: 1_000 }), "low");
    assert.equal(effort({ thinkingBudget: 900 }, 1_000), "high");
  });

  test("tools: declarations with either schema, tool config as tool_choice, Google's tools untranslated", () => {
    const { request, untranslated } = translate({
      contents: [{ parts: [{ text: "hi" }] }],
      tools: [
        {
          functionDeclarations: [
            {
              name: "a",
              description: "A",
              parameters: { type: "OBJECT", properties: { x: { type: "NUMBER" } } },
            },
            { name: "b", parametersJsonSchema: { type: "object", additionalProperties: false } },
            { name: "c" },
          ],
          googleSearch: {},
        },
        { codeExecution: {} },
      ],
      toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["b"] } },
    });
    assert.deepEqual(request.tools, [
      {
        type: "function",
        function: {
          name: "a",
          description: "A",
          parameters: { type: "object", properties: { x: { type: "number" } } },
        },
      },
      {
        type: "function",
        function: { name: "b", parameters: { type: "object", additionalProperties: false } },
      },
      { type: "function", function: { name: "c", parameters: { type: "object", properties: {} } } },
    ]);
    assert.deepEqual(request.tool_choice, { type: "function", function: { name: "b" } });
    assert.deepEqual(
      untranslated.map((u) => u.param),
      ["tools[0].googleSearch", "tools[1].codeExecution"],
    );
    const choice = (mode: string, allowedFunctionNames?: string[]) =>
      translate({
        contents: [{ parts: [{ text: "hi" }] }],
        tools: [{ functionDeclarations: [{ name: "a" }, { name: "b" }] }],
        toolConfig: { functionCallingConfig: { mode, allowedFunctionNames } },
      });
    assert.equal(choice("NONE").request.tool_choice, "none");
    assert.equal(choice("AUTO").request.tool_choice, "auto");
    assert.equal(choice("VALIDATED").request.tool_choice, "auto");
    const many = choice("ANY", ["a", "b"]);
    assert.equal(many.request.tool_choice, "required");
    assert.deepEqual(
      many.untranslated.map((u) => u.param),
      ["toolConfig.functionCallingConfig.allowedFunctionNames"],
    );
  });

  test("JSON Schema keeps its keywords; types Google's clients send upper-case are lower-cased", () => {
    assert.deepEqual(
      jsonSchemaOf(
        {
          type: "OBJECT",
          properties: { type: { type: "STRING", enum: ["OBJECT"] } },
          required: ["type"],
          $schema: "http://json-schema.org/draft-07/schema#",
        },
        false,
      ),
      {
        type: "object",
        properties: { type: { type: "string", enum: ["OBJECT"] } },
        required: ["type"],
        $schema: "http://json-schema.org/draft-07/schema#",
      },
    );
  });

  test("refusals name the field as the SDKs spell it", () => {
    assert.equal(refusal({ contents: [] }).param, "contents");
    assert.equal(
      refusal({ contents: [{ role: "system", parts: [{ text: "x" }] }] }).param,
      "contents[0].role",
    );
    assert.equal(refusal({ contents: [{ role: "user", parts: [] }] }).param, "contents[0].parts");
    assert.match(
      refusal({ contents: [{ parts: [{ text: "x", inlineData: { mimeType: "image/png", data: PNG } }] }] })
        .message,
      /one datum/,
    );
    assert.equal(
      refusal({ contents: [{ parts: [{ text: "x" }] }], generationConfig: { temperature: 3 } }).param,
      "generationConfig.temperature",
    );
    const orphan = refusal({
      contents: [{ role: "user", parts: [{ functionResponse: { name: "f", response: {} } }] }],
    });
    assert.equal(orphan.param, "contents[0].parts[0].functionResponse");
    assert.equal(
      refusal({ contents: [{ role: "user", parts: [{ functionCall: { name: "f" } }] }] }).param,
      "contents[0].parts[0].functionCall",
    );
    assert.equal(
      refusal({ contents: [{ parts: [{ text: "x" }] }], tools: [{ functionDeclarations: [{ name: "9x" }] }] })
        .param,
      "tools[0].functionDeclarations[0].name",
    );
  });
});

describe("errors", () => {
  test("Google's status names by HTTP status; the catalog's code, the field and when to retry as details", () => {
    assert.deepEqual([400, 401, 403, 404, 413, 429, 500, 502, 503, 504].map(statusName), [
      "INVALID_ARGUMENT",
      "UNAUTHENTICATED",
      "PERMISSION_DENIED",
      "NOT_FOUND",
      "INVALID_ARGUMENT",
      "RESOURCE_EXHAUSTED",
      "INTERNAL",
      "UNAVAILABLE",
      "UNAVAILABLE",
      "DEADLINE_EXCEEDED",
    ]);
    const limited = googleErrorBody(
      new GatewayError("rate_limited_requests", { headers: { "retry-after": "7" } }),
    );
    assert.equal(limited.error.code, 429);
    assert.deepEqual(limited.error.details.at(-1), {
      "@type": "type.googleapis.com/google.rpc.RetryInfo",
      retryDelay: "7s",
    });
    const quota = googleErrorBody(new GatewayError("key_limit_exceeded"));
    assert.equal(quota.error.status, "RESOURCE_EXHAUSTED");
    assert.deepEqual(quota.error.details, [
      {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        reason: "KEY_LIMIT_EXCEEDED",
        domain: "chat-gateway",
        metadata: { error_code: "key_limit_exceeded" },
      },
    ]);
  });
});

const usage: AnswerUsage = {
  prompt: 20,
  completion: 12,
  cachedInput: 5,
  cacheWrite: 0,
  reasoning: 4,
  reported: undefined,
};
const end = (choices: number[] = [0], withheld?: StreamEnd["withheld"]): StreamEnd => ({
  usage,
  withheld,
  choices: new Set(choices),
});
const chunk = (
  delta: Record<string, unknown>,
  finish: Chunk["choices"][number]["finish_reason"] = null,
  index = 0,
): Chunk => ({
  object: "chat.completion.chunk",
  choices: [{ index, delta, finish_reason: finish }],
});
const data = (events: readonly { data: string }[]) => events.map((e) => JSON.parse(e.data));
const context = { requestId: "req_abc", model: "pub", startedAt: 0 };

describe("usage", () => {
  test("usageMetadata: the prompt with its cache, the answer without its thinking", () => {
    assert.deepEqual(usageMetadata(usage), {
      promptTokenCount: 20,
      candidatesTokenCount: 8,
      totalTokenCount: 32,
      thoughtsTokenCount: 4,
      cachedContentTokenCount: 5,
    });
  });
});

describe("the stream renderer", () => {
  test("translated: text as it comes, function calls whole when their candidate finishes, the finish last", () => {
    const s = new GeminiStream(context, { thoughts: true });
    const out = [
      ...s.chunk(chunk({ role: "assistant", content: "", reasoning_content: "hmm" })),
      ...s.chunk(chunk({ content: "Hi" })),
      ...s.chunk(
        chunk({ tool_calls: [{ index: 0, id: "call_1", function: { name: "f", arguments: '{"a"' } }] }),
      ),
      ...s.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: ":1}" } }] })),
      ...s.chunk(chunk({}, "tool_calls")),
      ...s.chunk({ object: "chat.completion.chunk", choices: [], usage: undefined }),
      ...s.finish(end()),
      ...s.done(),
    ];
    const parts = data(out).map((e) => e.candidates[0].content?.parts);
    assert.deepEqual(parts, [
      [{ text: "hmm", thought: true }],
      [{ text: "Hi" }],
      [{ functionCall: { id: "call_1", name: "f", args: { a: 1 } } }],
      [{ text: "" }],
    ]);
    const last = data(out).at(-1);
    assert.equal(last.candidates[0].finishReason, "STOP");
    assert.deepEqual(last.usageMetadata, usageMetadata(usage));
    for (const e of data(out)) {
      assert.equal(e.modelVersion, "pub");
      assert.equal(e.responseId, "req_abc");
    }
  });

  test("translated, withheld: the notice after what was released, the finish says STOP with the safety extension", () => {
    const s = new GeminiStream(context, { thoughts: false });
    s.chunk(chunk({ role: "assistant", content: "Hello" }));
    const flag = { flagged: true, categories: ["x"] } as unknown as StreamEnd["withheld"];
    const closing = data([...s.finish(end([0], flag)), ...s.done()]);
    assert.match(
      closing[0].candidates[0].content.parts[0].text,
      /^\n\nThis gateway's content policy withheld/,
    );
    assert.equal(closing[1].candidates[0].finishReason, "STOP");
    assert.deepEqual(closing[1].safety.categories, ["x"]);
  });

  test("native: the upstream's events restamped, the finishing one held until the record", () => {
    const s = new GeminiStream(context, { thoughts: false });
    const native = (events: Record<string, unknown>[]): Chunk => ({
      object: "chat.completion.chunk",
      choices: [],
      native: events.map((d) => ({ event: "", data: d })),
    });
    const first = s.chunk(
      native([
        {
          candidates: [{ content: { parts: [{ text: "A" }] }, index: 0 }],
          modelVersion: "up",
          responseId: "x",
        },
      ]),
    );
    assert.deepEqual(data(first), [
      {
        candidates: [{ content: { parts: [{ text: "A" }] }, index: 0 }],
        modelVersion: "pub",
        responseId: "req_abc",
      },
    ]);
    const finishing = {
      candidates: [{ content: { parts: [{ text: "B" }] }, finishReason: "STOP", index: 0 }],
      usageMetadata: { promptTokenCount: 3 },
    };
    assert.deepEqual(s.chunk(native([finishing])), []);
    assert.deepEqual(s.finish(end()), []);
    assert.deepEqual(data(s.done()), [{ ...finishing, modelVersion: "pub", responseId: "req_abc" }]);
  });

  test("a failure mid-stream is Google's error object", () => {
    const s = new GeminiStream(context, { thoughts: false });
    const [event] = data(s.error(new GatewayError("upstream_timeout")));
    assert.equal(event.error.code, 504);
    assert.equal(event.error.status, "DEADLINE_EXCEEDED");
  });
});
