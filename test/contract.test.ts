// Contract: real gateway responses validated against the schemas of OpenAI's own OpenAPI
// description (a subset kept in test/contracts/): completions, stream chunks, the model list, and the
// error envelope of every refusal.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startTestGateway, TEST_MODEL, type TestGateway } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { type ContractValidator, loadContract } from "./support/openapi-validate.ts";

const COMPLETION = "CreateChatCompletionResponse";
const CHUNK = "CreateChatCompletionStreamResponse";
const MODEL_LIST = "ListModelsResponse";
const ERROR = "ErrorResponse";

let contract: ContractValidator;
let upstream: MockUpstream;
let gw: TestGateway;
let secret: string;
let demoSecret: string;

before(async () => {
  contract = loadContract();
  upstream = await startMockUpstream({ apiKey: "sk-upstream-secret-123" });
  gw = await startTestGateway({ upstream });
  secret = (await gw.key(await gw.account("contract"))).secret;
  demoSecret = (await gw.key(await gw.account("contract-demo", { plan: "demo-only" }))).secret;
});

after(async () => {
  await gw?.close();
  await upstream?.close();
});

function call(
  path: string,
  init: { method?: string; body?: unknown; key?: string | null; headers?: Record<string, string> } = {},
): Promise<Response> {
  const headers: Record<string, string> = { ...init.headers };
  const key = init.key === undefined ? secret : init.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (init.body !== undefined) headers["content-type"] ??= "application/json";
  return fetch(`${gw.baseURL}${path}`, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers,
    ...(init.body === undefined
      ? {}
      : { body: typeof init.body === "string" ? init.body : JSON.stringify(init.body) }),
    signal: AbortSignal.timeout(20_000),
  });
}

async function jsonOf(res: Response): Promise<any> {
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  return res.json();
}

/** created is a Unix time in seconds, close to now (not milliseconds, not zero) */
function assertRecentSeconds(created: unknown): void {
  assert.ok(typeof created === "number" && Number.isInteger(created), `created is an integer: ${created}`);
  const now = Date.now() / 1000;
  assert.ok(Math.abs(created - now) < 86_400, `created ${created} is a Unix time in seconds near ${now}`);
}

async function completion(body: Record<string, unknown>, key = secret): Promise<any> {
  const res = await call("/chat/completions", { body, key });
  assert.equal(res.status, 200, await res.clone().text());
  const json = await jsonOf(res);
  contract.assertValid(COMPLETION, json, `completion for ${JSON.stringify(body.messages)}`);
  assertRecentSeconds(json.created);
  assert.equal(json.model, body.model);
  return json;
}

/** The data payloads of an SSE body; asserts the framing and the final [DONE]. */
async function streamPayloads(res: Response): Promise<any[]> {
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
  const text = await res.text();
  assert.ok(text.endsWith("data: [DONE]\n\n"), "the stream ends with data: [DONE]");
  const events = text.slice(0, -2).split("\n\n");
  for (const e of events) assert.ok(e.startsWith("data: "), `SSE event: ${JSON.stringify(e)}`);
  return events.slice(0, -1).map((e) => JSON.parse(e.slice(6)));
}

async function streamed(body: Record<string, unknown>, key = secret): Promise<any[]> {
  const chunks = await streamPayloads(
    await call("/chat/completions", { body: { ...body, stream: true }, key }),
  );
  assert.ok(chunks.length > 0);
  chunks.forEach((chunk, i) => {
    contract.assertValid(CHUNK, chunk, `chunk ${i} of ${JSON.stringify(body.messages)}`);
    assertRecentSeconds(chunk.created);
    assert.equal(chunk.model, body.model);
  });
  return chunks;
}

/** An error answer: the contract's ErrorResponse plus the gateway's stricter envelope. */
async function assertErrorEnvelope(res: Response, status: number, code: string): Promise<any> {
  assert.equal(res.status, status);
  assert.ok(res.headers.get("x-request-id"), "x-request-id on errors too");
  const body = await jsonOf(res);
  contract.assertValid(ERROR, body, `the ${status} ${code} body`);
  assert.deepEqual(Object.keys(body), ["error"]);
  const { message, type, code: got, param } = body.error;
  assert.equal(typeof message, "string");
  assert.ok(message.length > 0);
  assert.equal(typeof type, "string");
  assert.ok(type.length > 0);
  assert.equal(typeof got, "string", "code is a string (the spec), not null");
  assert.equal(got, code);
  assert.ok(param === null || typeof param === "string");
  return body;
}

describe("the validator itself", () => {
  test("it resolves $refs and refuses what breaks the contract", () => {
    const good = {
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1_700_000_000,
      model: "m",
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: "hi", refusal: null },
          logprobs: null,
          finish_reason: "stop",
        },
      ],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    };
    assert.deepEqual(contract.errors(COMPLETION, good), []);
    // Each of these must be caught: a missing field, a wrong enum, a bad $ref'd object.
    assert.notDeepEqual(contract.errors(COMPLETION, { ...good, choices: undefined }), []);
    assert.notDeepEqual(contract.errors(COMPLETION, { ...good, object: "chat.completion.chunk" }), []);
    assert.notDeepEqual(contract.errors(COMPLETION, { ...good, usage: { prompt_tokens: 1 } }), []);
    assert.notDeepEqual(
      contract.errors(COMPLETION, { ...good, choices: [{ ...good.choices[0], message: { content: "x" } }] }),
      [],
    );
    // `nullable: true` in the document means null is allowed there, and only there.
    const chunk = {
      id: "c",
      object: "chat.completion.chunk",
      created: 1,
      model: "m",
      choices: [{ index: 0, delta: {}, finish_reason: null }],
      usage: null,
    };
    assert.deepEqual(contract.errors(CHUNK, chunk), []);
    assert.notDeepEqual(contract.errors(CHUNK, { ...chunk, model: null }), []);
    assert.notDeepEqual(contract.errors(MODEL_LIST, { object: "list", data: [{ id: "x" }] }), []);
  });
});

describe("successful answers match the contract", () => {
  test("non-streaming completion (text, two choices, refusal)", async () => {
    const text = await completion({
      model: TEST_MODEL,
      messages: [{ role: "user", content: "hi mock:tokens=4" }],
    });
    assert.equal(text.object, "chat.completion");
    const two = await completion({
      model: TEST_MODEL,
      messages: [{ role: "user", content: "two mock:tokens=2" }],
      n: 2,
    });
    assert.equal(two.choices.length, 2);
    const refusal = await completion({
      model: TEST_MODEL,
      messages: [{ role: "user", content: "no mock:refusal" }],
    });
    assert.equal(refusal.choices[0].message.content, null);
    assert.equal(typeof refusal.choices[0].message.refusal, "string");
  });

  test("non-streaming completion with a tool call", async () => {
    const json = await completion({
      model: TEST_MODEL,
      messages: [{ role: "user", content: "weather mock:tool" }],
      tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }],
    });
    assert.equal(json.choices[0].finish_reason, "tool_calls");
    assert.equal(json.choices[0].message.tool_calls[0].function.name, "get_weather");
  });

  test("non-streaming completion from the demo model (both plans)", async () => {
    const json = await completion({ model: "demo", messages: [{ role: "user", content: "hello" }] });
    assert.match(json.choices[0].message.content, /demo model/);
    await completion({ model: "demo", messages: [{ role: "user", content: "hello" }] }, demoSecret);
    const cut = await completion({
      model: "demo",
      messages: [{ role: "user", content: "hello" }],
      max_tokens: 3,
    });
    assert.equal(cut.choices[0].finish_reason, "length");
    assert.equal(cut.usage.completion_tokens, 3);
  });

  test("every streamed chunk, usage chunk included", async () => {
    const plain = await streamed({
      model: TEST_MODEL,
      messages: [{ role: "user", content: "s mock:tokens=3" }],
    });
    assert.ok(plain.every((c) => c.usage == null));
    const withUsage = await streamed({
      model: TEST_MODEL,
      messages: [{ role: "user", content: "s mock:tokens=3" }],
      stream_options: { include_usage: true },
    });
    const last = withUsage.at(-1);
    assert.deepEqual(last.choices, []);
    assert.equal(last.usage.completion_tokens, 3);
    // no usage from the upstream: the gateway's own usage chunk must match the contract too
    const estimated = await streamed({
      model: TEST_MODEL,
      messages: [{ role: "user", content: "s mock:tokens=3 mock:no-usage" }],
      stream_options: { include_usage: true },
    });
    assert.ok(estimated.at(-1).usage.total_tokens > 0);
  });

  test("streamed tool call and demo stream chunks", async () => {
    const tool = await streamed({
      model: TEST_MODEL,
      messages: [{ role: "user", content: "weather mock:tool" }],
      tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }],
      stream_options: { include_usage: true },
    });
    assert.ok(tool.some((c) => c.choices[0]?.delta?.tool_calls?.[0]?.function?.name === "get_weather"));
    const demo = await streamed({
      model: "demo",
      messages: [{ role: "user", content: "hello" }],
      stream_options: { include_usage: true },
    });
    assert.ok(demo.at(-1).usage.total_tokens > 0);
    const demoPlain = await streamed({ model: "demo", messages: [{ role: "user", content: "hello" }] });
    assert.ok(demoPlain.every((c) => c.usage == null && c.choices.length === 1));
  });

  test("GET /v1/models for both plans", async () => {
    for (const [key, ids] of [
      [secret, ["demo", TEST_MODEL]],
      [demoSecret, ["demo"]],
    ] as const) {
      const res = await call("/models", { key });
      assert.equal(res.status, 200);
      const json = await jsonOf(res);
      contract.assertValid(MODEL_LIST, json);
      assert.deepEqual(json.data.map((m: { id: string }) => m.id).sort(), [...ids].sort());
      for (const m of json.data) assertRecentSeconds(m.created);
    }
  });
});

describe("error bodies are the envelope", () => {
  test("authentication and authorization", async () => {
    await assertErrorEnvelope(await call("/models", { key: null }), 401, "missing_api_key");
    await assertErrorEnvelope(await call("/models", { key: `sk-${"x".repeat(43)}` }), 401, "invalid_api_key");
    await assertErrorEnvelope(
      await call("/chat/completions", {
        key: null,
        body: { model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] },
      }),
      401,
      "missing_api_key",
    );
  });

  test("request problems", async () => {
    const bad = await assertErrorEnvelope(
      await call("/chat/completions", { body: { model: TEST_MODEL, messages: [] } }),
      400,
      "invalid_request",
    );
    assert.equal(bad.error.param, "messages");
    await assertErrorEnvelope(await call("/chat/completions", { body: "{nope" }), 400, "invalid_json");
    await assertErrorEnvelope(
      await call("/chat/completions", { body: "{}", headers: { "content-type": "text/plain" } }),
      415,
      "unsupported_media_type",
    );
    await assertErrorEnvelope(
      await call("/chat/completions", {
        body: { model: TEST_MODEL, messages: [{ role: "user", content: "x".repeat(70 * 1024) }] },
      }),
      413,
      "request_too_large",
    );
    const model = await assertErrorEnvelope(
      await call("/chat/completions", {
        body: { model: "nope", messages: [{ role: "user", content: "hi" }] },
      }),
      404,
      "model_not_found",
    );
    assert.equal(model.error.param, "model");
    const route = await assertErrorEnvelope(await call("/nowhere"), 404, "http_error");
    assert.equal(route.error.type, "dev_gateway_error", "the spec's own type for HTTP-level errors");
  });

  test("quota and upstream failures", async () => {
    const poor = (await gw.key(await gw.account("contract-poor", { quota: 1 }))).secret;
    await assertErrorEnvelope(
      await call("/chat/completions", {
        key: poor,
        body: { model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] },
      }),
      429,
      "insufficient_quota",
    );
    for (const status of [500, 503]) {
      await assertErrorEnvelope(
        await call("/chat/completions", {
          body: { model: TEST_MODEL, messages: [{ role: "user", content: `x mock:status=${status}` }] },
        }),
        502,
        "upstream_error",
      );
    }
    await assertErrorEnvelope(
      await call("/chat/completions", {
        body: {
          model: TEST_MODEL,
          messages: [{ role: "user", content: "x mock:status=429 mock:retry-after=0" }],
        },
      }),
      429,
      "upstream_rate_limited",
    );
    await assertErrorEnvelope(
      await call("/chat/completions", {
        body: { model: TEST_MODEL, messages: [{ role: "user", content: "x mock:status=400" }] },
      }),
      400,
      "upstream_bad_request",
    );
  });

  test("a mid-stream failure is one SSE error event with the envelope, and no [DONE]", async () => {
    const res = await call("/chat/completions", {
      body: {
        model: TEST_MODEL,
        messages: [{ role: "user", content: "x mock:tokens=8 mock:drop-after=2" }],
        stream: true,
      },
    });
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.ok(!text.includes("[DONE]"), "no [DONE] after a failure");
    const events = text.trim().split("\n\n");
    const payloads = events.map((e) => JSON.parse(e.replace(/^data: /, "")));
    const errors = payloads.filter((p) => p.error !== undefined);
    assert.equal(errors.length, 1);
    assert.equal(payloads.at(-1), errors[0], "the error event is the last");
    contract.assertValid(ERROR, errors[0], "the SSE error event");
    assert.equal(errors[0].error.code, "upstream_error");
    for (const p of payloads.slice(0, -1)) contract.assertValid(CHUNK, p);
  });
});
