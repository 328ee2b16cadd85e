// Anthropic, Gemini and Azure OpenAI behind the gateway, driven with the official `openai`
// SDK against mocks that speak each provider's wire format and validate requests as the real
// APIs do (test/support/mock-*-upstream.ts): answers, streams, tool calls and their results,
// images, usage with cache and thinking figures, finish reasons, errors, refused fields, what
// each upstream receives, the records, and OpenAI's schema for every answer.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI, { APIError } from "openai";
import type { ChatCompletionChunk, ChatCompletionTool } from "openai/resources/chat/completions";
import { startTestGateway, type TestGateway } from "./support/gateway.ts";
import { MOCK_CACHE_READ, MOCK_CACHE_WRITE, startMockAnthropic } from "./support/mock-anthropic-upstream.ts";
import { MOCK_CACHED, startMockGemini } from "./support/mock-gemini-upstream.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { type ContractValidator, loadContract } from "./support/openapi-validate.ts";

const KEYS = {
  ANTHROPIC_KEY: "sk-ant-test-0123456789",
  GEMINI_KEY: "AIzaTest0123456789",
  AZURE_KEY: "azure0123456789abcdef",
};
const BOUND = 512;
const weather: ChatCompletionTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Current weather for a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, unit: { type: ["string", "null"] } },
      required: ["city"],
      additionalProperties: false,
    },
  },
};
const time: ChatCompletionTool = {
  type: "function",
  function: {
    name: "get_time",
    parameters: { type: "object", properties: { timezone: { type: "string" } } },
  },
};
/** 1x1 transparent PNG */
const PNG =
  "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

let anthropic: MockUpstream;
let gemini: MockUpstream;
let azure: MockUpstream;
let gw: TestGateway;
let client: OpenAI;
let contract: ContractValidator;

before(async () => {
  contract = loadContract();
  anthropic = await startMockAnthropic({ apiKey: KEYS.ANTHROPIC_KEY });
  gemini = await startMockGemini({ apiKey: KEYS.GEMINI_KEY });
  azure = await startMockUpstream({ apiKey: KEYS.AZURE_KEY, azure: true });
  const azureBase = azure.url.replace(/\/v1$/, "");
  const fast = { connect_ms: 2_000, first_byte_ms: 3_000, idle_ms: 3_000, total_ms: 10_000 };
  gw = await startTestGateway({
    env: { ...KEYS, WRONG_KEY: "not-the-key-0123456789" },
    config: {
      providers: [
        { id: "demo", type: "demo" },
        {
          id: "claude",
          type: "anthropic",
          base_url: anthropic.url,
          api_key_env: "ANTHROPIC_KEY",
          timeouts: fast,
          strict: true,
        },
        // the default: what Anthropic cannot honour is dropped, with a notice
        { id: "claude-lenient", type: "anthropic", base_url: anthropic.url, api_key_env: "ANTHROPIC_KEY" },
        { id: "claude-badkey", type: "anthropic", base_url: anthropic.url, api_key_env: "WRONG_KEY" },
        {
          id: "gem",
          type: "gemini",
          base_url: gemini.url,
          api_key_env: "GEMINI_KEY",
          timeouts: fast,
          strict: true,
        },
        { id: "gem-badkey", type: "gemini", base_url: gemini.url, api_key_env: "WRONG_KEY" },
        {
          id: "az",
          type: "azure-openai",
          base_url: azureBase,
          api_key_env: "AZURE_KEY",
          api_version: "2024-10-21",
        },
        {
          id: "az-v1",
          type: "azure-openai",
          base_url: azureBase,
          api_key_env: "AZURE_KEY",
          api_version: "v1",
        },
        { id: "az-badkey", type: "azure-openai", base_url: azureBase, api_key_env: "WRONG_KEY" },
      ],
      models: [
        {
          id: "claude-sonnet",
          provider: "claude",
          upstream_model: "claude-sonnet-4-5",
          max_output_tokens: BOUND,
          owned_by: "acme",
        },
        {
          id: "claude-lenient",
          provider: "claude-lenient",
          upstream_model: "claude-sonnet-4-5",
          owned_by: "acme",
        },
        {
          id: "claude-badkey",
          provider: "claude-badkey",
          upstream_model: "claude-sonnet-4-5",
          owned_by: "acme",
        },
        {
          id: "gemini-flash",
          provider: "gem",
          upstream_model: "gemini-2.5-flash",
          max_output_tokens: BOUND,
          owned_by: "acme",
        },
        { id: "gemini-badkey", provider: "gem-badkey", upstream_model: "gemini-2.5-flash", owned_by: "acme" },
        {
          id: "gpt-4o",
          provider: "az",
          upstream_model: "my-gpt4o-deployment",
          max_output_tokens: BOUND,
          owned_by: "acme",
        },
        { id: "gpt-4o-v1", provider: "az-v1", upstream_model: "gpt-4o", owned_by: "acme" },
        {
          id: "gpt-4o-badkey",
          provider: "az-badkey",
          upstream_model: "my-gpt4o-deployment",
          owned_by: "acme",
        },
      ],
      plans: [
        {
          id: "default",
          quota_tokens: 1_000_000_000,
          models: [
            "claude-sonnet",
            "claude-lenient",
            "claude-badkey",
            "gemini-flash",
            "gemini-badkey",
            "gpt-4o",
            "gpt-4o-v1",
            "gpt-4o-badkey",
          ],
        },
      ],
    },
  });
  const key = await gw.key(await gw.account("providers"));
  client = new OpenAI({ apiKey: key.secret, baseURL: gw.baseURL, maxRetries: 0, timeout: 20_000 });
});

after(async () => {
  await gw?.close();
  await Promise.all([anthropic?.close(), gemini?.close(), azure?.close()]);
});

type Params = Omit<OpenAI.ChatCompletionCreateParamsNonStreaming, "stream">;

/** A whole answer, validated against OpenAI's schema, with its call record. */
async function complete(params: Params) {
  const { data, response } = await client.chat.completions
    .create({ ...params, stream: false })
    .withResponse();
  contract.assertValid(
    "CreateChatCompletionResponse",
    JSON.parse(JSON.stringify(data)),
    `${params.model} answer`,
  );
  return {
    answer: data,
    record: await gw.record(response.headers.get("x-request-id")!),
    dropped: response.headers.get("x-gateway-dropped"),
  };
}

/** A streamed answer (usage asked for), every chunk validated, with its call record. */
async function stream(params: Params) {
  const { data, response } = await client.chat.completions
    .create({ ...params, stream: true, stream_options: { include_usage: true } })
    .withResponse();
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of data) {
    contract.assertValid("CreateChatCompletionStreamResponse", JSON.parse(JSON.stringify(chunk)), "chunk");
    chunks.push(chunk);
  }
  return { chunks, record: await gw.record(response.headers.get("x-request-id")!) };
}

const textOf = (chunks: ChatCompletionChunk[]) =>
  chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
const finishes = (chunks: ChatCompletionChunk[]) =>
  chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).filter((f) => f !== null);

/** The streamed tool calls of choice 0, put together by index. */
function streamedCalls(chunks: ChatCompletionChunk[]) {
  const calls: { id: string; name: string; arguments: string }[] = [];
  for (const c of chunks)
    for (const t of c.choices[0]?.delta.tool_calls ?? []) {
      calls[t.index] ??= { id: "", name: "", arguments: "" };
      const acc = calls[t.index]!;
      acc.id += t.id ?? "";
      acc.name += t.function?.name ?? "";
      acc.arguments += t.function?.arguments ?? "";
    }
  return calls;
}

async function refusal(call: Promise<unknown>): Promise<APIError> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof APIError, String(err));
    return err;
  }
  assert.fail("the call succeeded; it should have been refused");
}

/** A stream that ends in an error event after some chunks: what arrived, and the error. */
async function brokenStream(params: Params) {
  const s = await client.chat.completions.create({ ...params, stream: true });
  let text = "";
  const err = await refusal(
    (async () => {
      for await (const c of s) text += c.choices[0]?.delta.content ?? "";
    })(),
  );
  return { text, err };
}

const lastBody = (mock: MockUpstream) => mock.requests.at(-1)!.body;

/** One test per directive: the finish_reason it must end with, whole and streamed. */
function finishReasonTests(model: string, cases: [directive: string, finish: string][]) {
  for (const [directive, finish] of cases)
    test(`${directive} is finish_reason ${finish}, whole and streamed`, async () => {
      const messages = [{ role: "user" as const, content: `go ${directive}` }];
      const { answer } = await complete({ model, messages, max_tokens: 20 });
      assert.equal(answer.choices[0]!.finish_reason, finish);
      const { chunks } = await stream({ model, messages, max_tokens: 20 });
      assert.deepEqual(finishes(chunks), [finish]);
    });
}

describe("Anthropic", () => {
  const model = "claude-sonnet";

  test("text: system and developer to the top-level system, one user turn, the reserved bound as max_tokens, usage", async () => {
    const { answer, record } = await complete({
      model,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "developer", content: "Answer in English." },
        { role: "user", content: "first part" },
        { role: "user", content: [{ type: "text", text: "hello mock:tokens=5" }] },
      ],
      temperature: 0.5,
      top_p: 0.9,
      stop: "###",
      user: "user-42",
    });
    assert.equal(answer.choices[0]!.message.content, "Hello world this is a");
    assert.equal(answer.choices[0]!.finish_reason, "stop");
    const req = anthropic.requests.at(-1)!;
    assert.equal(req.path, "/v1/messages");
    assert.equal(req.headers["x-api-key"], KEYS.ANTHROPIC_KEY);
    assert.equal(req.headers["anthropic-version"], "2023-06-01");
    assert.deepEqual(req.body, {
      model: "claude-sonnet-4-5",
      max_tokens: BOUND,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "first part" },
            { type: "text", text: "hello mock:tokens=5" },
          ],
        },
      ],
      system: [
        { type: "text", text: "Be brief." },
        { type: "text", text: "Answer in English." },
      ],
      temperature: 0.5,
      top_p: 0.9,
      stop_sequences: ["###"],
      metadata: { user_id: "user-42" },
    });
    // the mock counts words: 2 + 3 + 2 + 2 read, 5 written
    assert.deepEqual({ p: answer.usage?.prompt_tokens, c: answer.usage?.completion_tokens }, { p: 9, c: 5 });
    assert.equal(record.usage_source, "upstream");
    assert.equal(Number(record.total_tokens), 14);
    assert.equal(record.provider, "claude");
  });

  test("a client's max_tokens is what goes upstream when it is the bound", async () => {
    await complete({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 40 });
    assert.equal(lastBody(anthropic).max_tokens, 40);
  });

  test("stream: text deltas, stop, usage from message_start and the last message_delta", async () => {
    const { chunks, record } = await stream({
      model,
      messages: [{ role: "user", content: "hi mock:tokens=4" }],
    });
    assert.equal(textOf(chunks), "Hello world this is");
    assert.equal(chunks[0]!.choices[0]!.delta.role, "assistant");
    assert.deepEqual(finishes(chunks), ["stop"]);
    const usage = chunks.at(-1)!.usage!;
    assert.deepEqual([usage.prompt_tokens, usage.completion_tokens], [2, 4]);
    assert.equal(lastBody(anthropic).stream, true);
    assert.equal(Number(record.completion_tokens), 4);
  });

  test("cache: prompt_tokens counts cache writes and reads, cached_tokens the reads, the record keeps both", async () => {
    const { answer, record } = await complete({
      model,
      messages: [{ role: "user", content: "hi there mock:cache" }],
    });
    assert.equal(answer.usage!.prompt_tokens, 3 + MOCK_CACHE_WRITE + MOCK_CACHE_READ);
    assert.equal(answer.usage!.prompt_tokens_details?.cached_tokens, MOCK_CACHE_READ);
    assert.equal(Number(record.prompt_tokens), 3 + MOCK_CACHE_WRITE + MOCK_CACHE_READ);
    assert.equal(Number(record.cached_tokens), MOCK_CACHE_READ);
    assert.equal(Number(record.cache_write_tokens), MOCK_CACHE_WRITE);
  });

  test("stream with several message_delta events: running totals, the last one charged, never their sum", async () => {
    const { chunks, record } = await stream({
      model,
      messages: [{ role: "user", content: "hi mock:tokens=6 mock:split-usage mock:cache" }],
    });
    const usage = chunks.at(-1)!.usage!;
    assert.equal(usage.completion_tokens, 6, "not 6 + 3");
    assert.equal(
      usage.prompt_tokens,
      4 + MOCK_CACHE_WRITE + MOCK_CACHE_READ,
      "the input figures counted once",
    );
    assert.equal(Number(record.completion_tokens), 6);
    assert.equal(Number(record.cached_tokens), MOCK_CACHE_READ);
  });

  test("a tool call, then its result sent back: tool_use and tool_result blocks upstream", async () => {
    const ask = { role: "user" as const, content: "weather in Paris? mock:tool" };
    const { answer } = await complete({ model, tools: [weather], tool_choice: "required", messages: [ask] });
    const choice = answer.choices[0]!;
    assert.equal(choice.finish_reason, "tool_calls");
    const [call] = choice.message.tool_calls!;
    assert.equal(call!.type, "function");
    assert.equal(call!.type === "function" && call!.function.name, "get_weather");
    assert.equal(call!.type === "function" && call!.function.arguments, '{"city":"Paris"}');
    const sent = lastBody(anthropic);
    assert.deepEqual(sent.tools, [
      {
        name: "get_weather",
        description: "Current weather for a city",
        input_schema: weather.function.parameters,
      },
    ]);
    assert.deepEqual(sent.tool_choice, { type: "any" });

    const { answer: after } = await complete({
      model,
      tools: [weather],
      messages: [ask, choice.message, { role: "tool", tool_call_id: call!.id, content: "18 degrees" }],
    });
    assert.equal(after.choices[0]!.finish_reason, "stop");
    const back = lastBody(anthropic).messages;
    assert.deepEqual(back[1], {
      role: "assistant",
      content: [{ type: "tool_use", id: call!.id, name: "get_weather", input: { city: "Paris" } }],
    });
    assert.deepEqual(back[2], {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: call!.id, content: [{ type: "text", text: "18 degrees" }] },
      ],
    });
  });

  test("parallel tool calls, streamed: indexed 0 and 1 as OpenAI does, arguments put together", async () => {
    const { chunks } = await stream({
      model,
      tools: [weather, time],
      parallel_tool_calls: true,
      messages: [{ role: "user", content: "weather and time mock:tools=2" }],
    });
    const calls = streamedCalls(chunks);
    assert.deepEqual(
      calls.map((c) => [c.name, c.arguments]),
      [
        ["get_weather", '{"city":"Paris"}'],
        ["get_time", '{"timezone":"CET"}'],
      ],
    );
    assert.ok(calls.every((c) => c.id.startsWith("toolu_")));
    assert.deepEqual(finishes(chunks), ["tool_calls"]);
    assert.equal("disable_parallel_tool_use" in (lastBody(anthropic).tool_choice ?? {}), false);
  });

  test("parallel_tool_calls false and a named tool: tool_choice tool with disable_parallel_tool_use", async () => {
    await complete({
      model,
      tools: [weather, time],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      parallel_tool_calls: false,
      messages: [{ role: "user", content: "weather mock:tool" }],
    });
    assert.deepEqual(lastBody(anthropic).tool_choice, {
      type: "tool",
      name: "get_weather",
      disable_parallel_tool_use: true,
    });
  });

  test("images: a data URL as a base64 source, an https URL as a url source", async () => {
    await complete({
      model,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "what is in these" },
            { type: "image_url", image_url: { url: PNG } },
            { type: "image_url", image_url: { url: "https://example.com/cat.jpg" } },
          ],
        },
      ],
    });
    const [, inline, byUrl] = lastBody(anthropic).messages[0].content;
    assert.deepEqual(inline, {
      type: "image",
      source: { type: "base64", media_type: "image/png", data: PNG.slice("data:image/png;base64,".length) },
    });
    assert.deepEqual(byUrl, { type: "image", source: { type: "url", url: "https://example.com/cat.jpg" } });
  });

  test("reasoning_effort: a thinking budget within the bound; the thinking itself is not passed on", async () => {
    const { answer } = await complete({
      model,
      reasoning_effort: "medium",
      max_tokens: 4000,
      messages: [{ role: "user", content: "think mock:thinking mock:tokens=3" }],
    });
    assert.deepEqual(lastBody(anthropic).thinking, { type: "enabled", budget_tokens: 2000 });
    assert.equal(lastBody(anthropic).max_tokens, 4000);
    assert.equal(answer.choices[0]!.message.content, "Hello world this");
    const refused = await refusal(
      complete({
        model,
        reasoning_effort: "high",
        max_tokens: 1000,
        messages: [{ role: "user", content: "x" }],
      }),
    );
    assert.equal(refused.status, 400);
    assert.equal(refused.param, "reasoning_effort");
  });

  finishReasonTests(model, [
    ["mock:stop-sequence", "stop"],
    ["mock:tokens=9999", "length"],
    ["mock:refusal", "content_filter"],
  ]);

  test("errors: 529 and 429 are 429 upstream_rate_limited (#11), 500 is 502, 400 is upstream_bad_request, a refused key says so without it", async () => {
    for (const status of [529, 429, 500]) {
      const err = await refusal(
        complete({ model, messages: [{ role: "user", content: `x mock:status=${status}` }] }),
      );
      assert.equal(err.status, status === 500 ? 502 : 429);
      assert.equal(err.code, status === 500 ? "upstream_error" : "upstream_rate_limited");
      if (status === 500) assert.match(err.message, /HTTP 500/);
    }
    const spend = await refusal(
      complete({ model, messages: [{ role: "user", content: "x mock:spend-limit" }] }),
    );
    assert.equal(spend.status, 502);
    assert.match(spend.message, /usage limits/);
    const bad = await refusal(
      complete({ model, messages: [{ role: "user", content: "x mock:status=400" }] }),
    );
    assert.equal(bad.status, 400);
    assert.equal(bad.code, "upstream_bad_request");
    const key = await refusal(
      complete({ model: "claude-badkey", messages: [{ role: "user", content: "x" }] }),
    );
    assert.equal(key.status, 502);
    assert.equal(key.code, "upstream_key_refused");
    assert.equal(key.headers?.get("x-should-retry"), "false");
    assert.equal(key.message.includes("not-the-key"), false);
    const record = await gw.record(key.headers!.get("x-request-id")!);
    assert.equal(record.error_code, "upstream_key_refused");
    assert.equal(Number(record.total_tokens), 0);
  });

  test("an overloaded error event before any content is an ordinary failure: a status (429, the upstream is saturated), no stream", async () => {
    const err = await refusal(
      client.chat.completions.create({
        model,
        stream: true,
        messages: [{ role: "user", content: "x mock:error-event" }],
      }),
    );
    assert.equal(err.status, 429);
    assert.equal(err.code, "upstream_rate_limited");
  });

  test("an error event after content: the stream ends with an error event, charged what was written", async () => {
    const { text, err } = await brokenStream({
      model,
      messages: [{ role: "user", content: "x mock:tokens=8 mock:error-after=3" }],
    });
    assert.equal(text, "Hello world this");
    assert.match(err.message, /api_error/);
  });

  test("fields Anthropic cannot honour are refused naming field and provider; nothing goes upstream", async () => {
    const before = anthropic.requests.length;
    for (const [field, value] of [
      ["n", 2],
      ["logprobs", true],
      ["presence_penalty", 0.5],
      ["seed", 7],
      ["temperature", 1.5],
    ] as const) {
      const err = await refusal(
        complete({ model, messages: [{ role: "user", content: "x" }], [field]: value }),
      );
      assert.equal(err.status, 400, field);
      assert.equal(err.code, "invalid_request");
      assert.equal(err.param, field);
      assert.match(err.message, /Anthropic/);
    }
    assert.equal(anthropic.requests.length, before, "nothing was sent upstream");
  });

  // Structured output on a Claude-backed model: the AI SDK's, LangChain's and the Agents SDK's
  // default path for JSON output through the OpenAI APIs.
  test("response_format json_schema is Anthropic's output_config.format; JSON mode an object schema", async () => {
    const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    await complete({
      model,
      messages: [{ role: "user", content: "x mock:tokens=2" }],
      response_format: { type: "json_schema", json_schema: { name: "place", schema, strict: true } },
    });
    assert.deepEqual(lastBody(anthropic).output_config, { format: { type: "json_schema", schema } });
    await complete({
      model,
      messages: [{ role: "user", content: "x mock:tokens=2" }],
      response_format: { type: "json_object" },
    });
    assert.deepEqual(lastBody(anthropic).output_config, {
      format: { type: "json_schema", schema: { type: "object" } },
    });
  });

  test("values that change nothing are dropped quietly; by default what strict mode refuses is dropped", async () => {
    await complete({
      model,
      n: 1,
      presence_penalty: 0,
      frequency_penalty: 0,
      logprobs: false,
      parallel_tool_calls: true,
      store: false,
      messages: [{ role: "user", content: "x" }],
    });
    const sent = lastBody(anthropic);
    for (const field of [
      "n",
      "presence_penalty",
      "frequency_penalty",
      "logprobs",
      "parallel_tool_calls",
      "store",
    ])
      assert.equal(field in sent, false, field);
    const { answer, dropped, record } = await complete({
      model: "claude-lenient",
      n: 2,
      seed: 3,
      messages: [{ role: "user", content: "x" }],
    });
    assert.equal(answer.choices.length, 1);
    assert.equal("seed" in lastBody(anthropic), false);
    // the client is told what its upstream did not get, and so is the record
    assert.equal(dropped, "n, seed");
    assert.deepEqual(JSON.parse(record.params!).dropped, ["n", "seed"]);
  });
});

describe("Google Gemini", () => {
  const model = "gemini-flash";

  test("text: systemInstruction, user/model roles, generationConfig with the reserved bound", async () => {
    const { answer, record } = await complete({
      model,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "hi" },
        { role: "assistant", content: "Hello." },
        { role: "user", content: "again mock:tokens=3" },
      ],
      temperature: 0.3,
      top_p: 0.8,
      stop: ["END"],
      seed: 11,
    });
    assert.equal(answer.choices[0]!.message.content, "Hello world this");
    const req = gemini.requests.at(-1)!;
    assert.equal(req.path, "/v1beta/models/gemini-2.5-flash:generateContent");
    assert.equal(req.headers["x-goog-api-key"], KEYS.GEMINI_KEY);
    assert.deepEqual(req.body, {
      contents: [
        { role: "user", parts: [{ text: "hi" }] },
        { role: "model", parts: [{ text: "Hello." }] },
        { role: "user", parts: [{ text: "again mock:tokens=3" }] },
      ],
      systemInstruction: { parts: [{ text: "Be brief." }] },
      generationConfig: {
        maxOutputTokens: BOUND,
        temperature: 0.3,
        topP: 0.8,
        stopSequences: ["END"],
        seed: 11,
      },
    });
    assert.equal(Number(record.prompt_tokens), 6);
    assert.equal(Number(record.completion_tokens), 3);
  });

  test("stream: alt=sse, cumulative usage charged once (the last), thinking in completion and reasoning_tokens", async () => {
    const { chunks, record } = await stream({
      model,
      messages: [{ role: "user", content: "hi mock:tokens=4 mock:thinking=7 mock:cache" }],
    });
    assert.equal(
      gemini.requests.at(-1)!.path,
      "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    );
    assert.equal(textOf(chunks), "Hello world this is");
    assert.deepEqual(finishes(chunks), ["stop"]);
    const usage = chunks.at(-1)!.usage!;
    assert.equal(usage.completion_tokens, 4 + 7);
    assert.equal(usage.completion_tokens_details?.reasoning_tokens, 7);
    assert.equal(usage.prompt_tokens_details?.cached_tokens, MOCK_CACHED);
    assert.equal(Number(record.completion_tokens), 11);
    assert.equal(Number(record.reasoning_tokens), 7);
    assert.equal(Number(record.cached_tokens), MOCK_CACHED);
  });

  test("a signed function call: the thoughtSignature rides in the tool-call id and goes back unchanged", async () => {
    const ask = { role: "user" as const, content: "weather? mock:tool" };
    const { answer } = await complete({ model, tools: [weather], messages: [ask] });
    const choice = answer.choices[0]!;
    assert.equal(choice.finish_reason, "tool_calls");
    const call = choice.message.tool_calls![0]!;
    assert.match(call.id, /^call_[0-9a-f]{16}_0_ts_[\w-]+$/);
    // the schema keywords Gemini's Schema lacks are left out, `type: [T, null]` is nullable
    assert.deepEqual(lastBody(gemini).tools[0].functionDeclarations[0].parameters, {
      type: "object",
      properties: { city: { type: "string" }, unit: { type: "string", nullable: true } },
      required: ["city"],
    });
    const { answer: after } = await complete({
      model,
      tools: [weather],
      messages: [ask, choice.message, { role: "tool", tool_call_id: call.id, content: '{"temp": 18}' }],
    });
    assert.equal(after.choices[0]!.finish_reason, "stop");
    const contents = lastBody(gemini).contents;
    assert.equal(contents[1].role, "model");
    assert.deepEqual(contents[1].parts[0].functionCall, { name: "get_weather", args: { city: "Paris" } });
    assert.equal(typeof contents[1].parts[0].thoughtSignature, "string");
    assert.deepEqual(contents[2], {
      role: "user",
      parts: [{ functionResponse: { name: "get_weather", response: { temp: 18 } } }],
    });
  });

  test("a call sent back without its signature is refused by Gemini (the mock, as the API): 400", async () => {
    const ask = { role: "user" as const, content: "weather? mock:tool" };
    const { answer } = await complete({ model, tools: [weather], messages: [ask] });
    const call = answer.choices[0]!.message.tool_calls![0]!;
    const stripped = { ...call, id: call.id.replace(/_ts_.*$/, "") };
    const err = await refusal(
      complete({
        model,
        tools: [weather],
        messages: [
          ask,
          { role: "assistant", content: null, tool_calls: [stripped] },
          { role: "tool", tool_call_id: stripped.id, content: "18" },
        ],
      }),
    );
    assert.equal(err.status, 400);
    assert.match(err.message, /thought_signature/);
  });

  test("parallel calls, streamed, and both results sent back in one turn", async () => {
    const ask = { role: "user" as const, content: "both mock:tools=2" };
    const { chunks } = await stream({ model, tools: [weather, time], messages: [ask] });
    const calls = streamedCalls(chunks);
    assert.deepEqual(
      calls.map((c) => c.name),
      ["get_weather", "get_time"],
    );
    assert.deepEqual(finishes(chunks), ["tool_calls"]);
    const { answer } = await complete({
      model,
      tools: [weather, time],
      messages: [
        ask,
        {
          role: "assistant",
          content: null,
          tool_calls: calls.map((c) => ({
            id: c.id,
            type: "function" as const,
            function: { name: c.name, arguments: c.arguments },
          })),
        },
        { role: "tool", tool_call_id: calls[0]!.id, content: "sunny" },
        { role: "tool", tool_call_id: calls[1]!.id, content: "12:00" },
      ],
    });
    assert.equal(answer.choices[0]!.finish_reason, "stop");
    assert.deepEqual(lastBody(gemini).contents[2].parts, [
      { functionResponse: { name: "get_weather", response: { result: "sunny" } } },
      { functionResponse: { name: "get_time", response: { result: "12:00" } } },
    ]);
  });

  test("tool_choice, n, response_format json_schema and reasoning_effort in Gemini's fields", async () => {
    const { answer } = await complete({
      model,
      n: 2,
      tools: [weather],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      response_format: {
        type: "json_schema",
        json_schema: {
          name: "w",
          schema: { type: "object", properties: { t: { type: "number" } }, additionalProperties: false },
        },
      },
      reasoning_effort: "low",
      messages: [{ role: "user", content: "json please" }],
    });
    assert.equal(answer.choices.length, 2);
    const sent = lastBody(gemini);
    assert.deepEqual(sent.toolConfig, {
      functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_weather"] },
    });
    assert.equal(sent.generationConfig.candidateCount, 2);
    assert.equal(sent.generationConfig.responseMimeType, "application/json");
    assert.deepEqual(sent.generationConfig.responseSchema, {
      type: "object",
      properties: { t: { type: "number" } },
    });
    assert.deepEqual(sent.generationConfig.thinkingConfig, { thinkingBudget: 512 });
  });

  test("an image as inlineData; an image by URL is refused before anything is sent", async () => {
    await complete({
      model,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "see" },
            { type: "image_url", image_url: { url: PNG } },
          ],
        },
      ],
    });
    assert.deepEqual(lastBody(gemini).contents[0].parts[1], {
      inlineData: { mimeType: "image/png", data: PNG.slice("data:image/png;base64,".length) },
    });
    const before = gemini.requests.length;
    const err = await refusal(
      complete({
        model,
        messages: [
          { role: "user", content: [{ type: "image_url", image_url: { url: "https://example.com/a.png" } }] },
        ],
      }),
    );
    assert.equal(err.status, 400);
    assert.equal(err.param, "messages[0].content[0]");
    assert.match(err.message, /Gemini/);
    assert.equal(gemini.requests.length, before);
  });

  finishReasonTests(model, [
    ["mock:finish=SAFETY", "content_filter"],
    ["mock:finish=RECITATION", "content_filter"],
    ["mock:finish=PROHIBITED_CONTENT", "content_filter"],
    ["mock:tokens=9999", "length"],
    ["mock:blocked", "content_filter"],
    ["mock:finish=OTHER", "stop"],
  ]);

  test("errors: 429 is 429 upstream_rate_limited (#11), 503 is 502, 400 upstream_bad_request, an unknown key is the operator's error", async () => {
    for (const status of [429, 503]) {
      const err = await refusal(
        complete({ model, messages: [{ role: "user", content: `x mock:status=${status}` }] }),
      );
      assert.equal(err.status, status === 429 ? 429 : 502);
    }
    const bad = await refusal(
      complete({ model, messages: [{ role: "user", content: "x mock:status=400" }] }),
    );
    assert.equal(bad.code, "upstream_bad_request");
    const key = await refusal(
      complete({ model: "gemini-badkey", messages: [{ role: "user", content: "x" }] }),
    );
    assert.equal(key.code, "upstream_key_refused");
  });

  test("an error object mid-stream ends the stream with an error event", async () => {
    const { text, err } = await brokenStream({
      model,
      messages: [{ role: "user", content: "x mock:tokens=6 mock:error-after=2" }],
    });
    assert.equal(text, "Hello world");
    assert.match(err.message, /UNAVAILABLE|overloaded/);
  });

  test("refused: parallel_tool_calls false, logprobs; a tool result naming no call", async () => {
    for (const [field, value] of [
      ["parallel_tool_calls", false],
      ["logprobs", true],
    ] as const) {
      const err = await refusal(
        complete({ model, messages: [{ role: "user", content: "x" }], tools: [weather], [field]: value }),
      );
      assert.equal(err.param, field);
      assert.match(err.message, /Google Gemini/);
    }
    const err = await refusal(
      complete({
        model,
        messages: [
          { role: "user", content: "x" },
          { role: "tool", tool_call_id: "call_x", content: "1" },
        ],
      }),
    );
    assert.equal(err.param, "messages[1].tool_call_id");
  });
});

describe("Azure OpenAI", () => {
  const model = "gpt-4o";

  test("the deployment URL with api-version and the api-key header; v1 with the model in the body", async () => {
    const { answer, record } = await complete({
      model,
      messages: [{ role: "user", content: "hi mock:tokens=3 mock:cache" }],
    });
    assert.equal(answer.choices[0]!.message.content, "Hello world this");
    const req = azure.requests.at(-1)!;
    assert.equal(req.path, "/openai/deployments/my-gpt4o-deployment/chat/completions");
    assert.equal(req.headers["api-key"], KEYS.AZURE_KEY);
    assert.equal(req.headers.authorization, undefined);
    assert.equal(req.body.max_tokens, BOUND);
    assert.equal(Number(record.cached_tokens), 3);
    await complete({ model: "gpt-4o-v1", messages: [{ role: "user", content: "hi" }] });
    assert.equal(azure.requests.at(-1)!.path, "/openai/v1/chat/completions");
    assert.equal(azure.requests.at(-1)!.body.model, "gpt-4o");
  });

  test("stream: Azure's prompt-filter frame (no choices) never reaches the client", async () => {
    const { chunks } = await stream({ model, messages: [{ role: "user", content: "hi mock:tokens=3" }] });
    assert.equal(textOf(chunks), "Hello world this");
    assert.ok(
      chunks.slice(0, -1).every((c) => c.choices.length === 1),
      "every chunk but the usage one has its choice",
    );
    assert.ok(chunks.every((c) => !("prompt_filter_results" in c)));
    assert.equal(chunks.at(-1)!.usage?.completion_tokens, 3);
  });

  test("a prompt Azure's filter refuses is our 400 content_filter, nothing charged", async () => {
    const err = await refusal(complete({ model, messages: [{ role: "user", content: "x mock:blocked" }] }));
    assert.equal(err.status, 400);
    assert.equal(err.code, "content_filter");
    assert.equal(err.type, "invalid_request_error");
    const record = await gw.record(err.headers!.get("x-request-id")!);
    assert.equal(record.status, "content_filter");
    assert.equal(Number(record.total_tokens), 0);
  });

  test("finish_reason content_filter passes through, whole and streamed", async () => {
    const messages = [{ role: "user" as const, content: "x mock:filtered" }];
    assert.equal((await complete({ model, messages })).answer.choices[0]!.finish_reason, "content_filter");
    assert.deepEqual(finishes((await stream({ model, messages })).chunks), ["content_filter"]);
  });

  test("an error inside the 200 stream before any choice is an ordinary 502", async () => {
    const err = await refusal(
      client.chat.completions.create({
        model,
        stream: true,
        messages: [{ role: "user", content: "x mock:error-event" }],
      }),
    );
    assert.equal(err.status, 502);
  });

  test("tool calls pass through as OpenAI's", async () => {
    const { answer } = await complete({
      model,
      tools: [weather],
      messages: [{ role: "user", content: "x mock:tool" }],
    });
    assert.equal(answer.choices[0]!.finish_reason, "tool_calls");
    assert.deepEqual(lastBody(azure).tools, [weather]);
  });

  test("errors: 429 is 429 upstream_rate_limited (#11), 500 is 502, 400 upstream_bad_request, a refused api-key the operator's error", async () => {
    for (const status of [429, 500]) {
      const err = await refusal(
        complete({ model, messages: [{ role: "user", content: `x mock:status=${status}` }] }),
      );
      assert.equal(err.status, status === 429 ? 429 : 502);
      assert.equal(err.code, status === 429 ? "upstream_rate_limited" : "upstream_error");
    }
    const bad = await refusal(
      complete({ model, messages: [{ role: "user", content: "x mock:status=400" }] }),
    );
    assert.equal(bad.code, "upstream_bad_request");
    const key = await refusal(
      complete({ model: "gpt-4o-badkey", messages: [{ role: "user", content: "x" }] }),
    );
    assert.equal(key.code, "upstream_key_refused");
    assert.equal(key.message.includes("not-the-key"), false);
  });

  test("a stream cut mid-way ends with an error event after what arrived", async () => {
    const { text, err } = await brokenStream({
      model,
      messages: [{ role: "user", content: "x mock:tokens=8 mock:drop-after=3" }],
    });
    assert.equal(text, "Hello world this");
    assert.equal(err.code, "upstream_error");
  });
});

test("GET /v1/models lists public names only, nothing of the providers behind them", async () => {
  const res = await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${client.apiKey}` } });
  const text = await res.text();
  const list = JSON.parse(text);
  contract.assertValid("ListModelsResponse", list);
  assert.deepEqual(list.data.map((m: { id: string }) => m.id).sort(), [
    "claude-badkey",
    "claude-lenient",
    "claude-sonnet",
    "gemini-badkey",
    "gemini-flash",
    "gpt-4o",
    "gpt-4o-badkey",
    "gpt-4o-v1",
  ]);
  for (const m of list.data) assert.deepEqual(Object.keys(m).sort(), ["created", "id", "object", "owned_by"]);
  for (const hidden of [
    "anthropic",
    "azure-openai",
    "claude-sonnet-4-5",
    "gemini-2.5",
    "my-gpt4o-deployment",
    "127.0.0.1",
  ])
    assert.equal(text.includes(hidden), false, hidden);
});
