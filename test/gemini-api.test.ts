// Google's Gemini API (`/v1beta/models/{model}:generateContent`, `:streamGenerateContent`,
// `:countTokens`, `GET /v1beta/models`) with Google's @google/genai SDK as the client, against a
// Gemini upstream (the Gemini mock: the body goes natively) and an OpenAI-compatible one (the
// chat completions mock: translated through the canonical request). Answers, streams, function
// calls with their responses sent back, structured output, a chat's second turn, token counts,
// the model list, errors as the SDK raises them, what each upstream received, and the records
// (api gemini, the usage the upstream reported, exactly).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  ApiError,
  type Content,
  type FunctionDeclaration,
  type GenerateContentResponse,
  GoogleGenAI,
  Type,
} from "@google/genai";
import type { ConfigInput } from "../src/config/schema.ts";
import { localPromptTokens } from "../src/providers/prompt-bound.ts";
import type { CallRecord } from "../src/records/call-record.ts";
import { startTestGateway, type TestGateway } from "./support/gateway.ts";
import { startMockGemini } from "./support/mock-gemini-upstream.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { MOCK_TOOL_TEXT } from "./support/mock-provider.ts";

const KEYS = { MOCK_UPSTREAM_KEY: "sk-upstream-gemini-1", GEMINI_KEY: "AIzaGeminiEdge0123456789" };

/** The public model on each kind of upstream, and how a Gemini API call reaches it. */
const UPSTREAMS = [
  { kind: "gemini", model: "gemini-test", label: "Gemini upstream (native)" },
  { kind: "openai", model: "gpt-test", label: "OpenAI-compatible upstream (translated)" },
] as const;
type Kind = (typeof UPSTREAMS)[number]["kind"];

/** the words the mocks answer with, one token each */
const REPLY = (n: number) =>
  "Hello world this is a mock reply from the model with some simple words for testing"
    .split(" ")
    .slice(0, n)
    .join(" ");

const weather: FunctionDeclaration = {
  name: "get_weather",
  description: "Current weather for a city",
  parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } }, required: ["city"] },
};

let gw: TestGateway;
let mocks: Record<Kind, MockUpstream>;
let key: { id: string; secret: string };
let ai: GoogleGenAI;

const client = (apiKey: string) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: gw.origin } });

before(async () => {
  mocks = {
    gemini: await startMockGemini({ apiKey: KEYS.GEMINI_KEY }),
    openai: await startMockUpstream({ apiKey: KEYS.MOCK_UPSTREAM_KEY }),
  };
  const timeouts = { connect_ms: 2_000, first_byte_ms: 5_000, idle_ms: 5_000, total_ms: 15_000 };
  const config: Partial<ConfigInput> = {
    providers: [
      { id: "gem", type: "gemini", base_url: mocks.gemini.url, api_key_env: "GEMINI_KEY", timeouts },
      {
        id: "oai",
        type: "openai-compatible",
        base_url: mocks.openai.url,
        api_key_env: "MOCK_UPSTREAM_KEY",
        timeouts,
      },
    ],
    models: [
      { id: "gemini-test", provider: "gem", upstream_model: "gemini-2.5-flash", max_output_tokens: 512 },
      {
        id: "gpt-test",
        provider: "oai",
        upstream_model: "mock-model",
        max_output_tokens: 512,
        capabilities: { reasoning: true },
      },
      { id: "meta/llama:3", provider: "oai", upstream_model: "mock-model" },
      { id: "not-in-plan", provider: "oai", upstream_model: "mock-model" },
    ],
    plans: [
      { id: "default", quota_tokens: 1_000_000_000, models: ["gemini-test", "gpt-test", "meta/llama:3"] },
    ],
  };
  gw = await startTestGateway({ env: KEYS, config });
  key = await gw.key(await gw.account("gemini-api"));
  ai = client(key.secret);
});

after(async () => {
  await gw?.close();
  await Promise.all(Object.values(mocks ?? {}).map((m) => m.close()));
});

/** The record of an answer: its responseId is the request id. */
async function recordOf(response: { responseId?: string | undefined }): Promise<CallRecord> {
  assert.match(response.responseId ?? "", /^req_/, "the responseId is the request id");
  return gw.record(response.responseId!);
}

/** The body the upstream of `kind` received last. */
function lastBody(kind: Kind): any {
  const requests = mocks[kind].requests;
  assert.ok(requests.length, "the upstream was called");
  return requests.at(-1)!.body;
}

/** A call that must fail, as the SDK raises it: its status and Google's error object. */
async function refused(call: Promise<unknown>): Promise<{ status: number; error: any }> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof ApiError, `expected an ApiError, got ${String(err)}`);
    return { status: err.status, error: JSON.parse(err.message).error };
  }
  assert.fail("the call succeeded; it should have been refused");
}

/** A raw request to the gateway, for what the SDK hides (headers, framing, other key placements). */
function post(
  path: string,
  body: unknown,
  headers: Record<string, string> = { "x-goog-api-key": key.secret },
) {
  return fetch(`${gw.origin}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

/** The record's usage against the usageMetadata the client got. */
function assertUsage(row: CallRecord, usage: GenerateContentResponse["usageMetadata"]): void {
  assert.ok(usage, "the answer carries usageMetadata");
  assert.equal(Number(row.prompt_tokens), usage.promptTokenCount);
  assert.equal(
    Number(row.completion_tokens),
    (usage.candidatesTokenCount ?? 0) + (usage.thoughtsTokenCount ?? 0),
  );
  assert.equal(Number(row.total_tokens), usage.totalTokenCount);
  assert.equal(row.usage_source, "upstream");
}

for (const { kind, model, label } of UPSTREAMS) {
  describe(label, () => {
    test("generateContent: Google's response, our responseId and the public model; usage exact; recorded as gemini", async () => {
      const response = await ai.models.generateContent({
        model,
        contents: "Say hello mock:tokens=5",
        config: { systemInstruction: "You are terse.", temperature: 0.5, maxOutputTokens: 100 },
      });
      assert.equal(response.text, REPLY(5));
      assert.equal(response.candidates?.[0]?.finishReason, "STOP");
      assert.equal(response.modelVersion, model);
      const row = await recordOf(response);
      assert.equal(row.api, "gemini");
      assert.equal(row.status, "ok");
      assert.equal(row.public_model, model);
      assert.equal(Number(row.stream), 0);
      // the words of the system instruction and of the text (the directive is one)
      assert.equal(response.usageMetadata?.promptTokenCount, 6);
      assert.equal(response.usageMetadata?.candidatesTokenCount, 5);
      assertUsage(row, response.usageMetadata);
      const body = lastBody(kind);
      if (kind === "gemini") {
        // the body as the SDK sent it, with the reserved output bound
        assert.deepEqual(body.systemInstruction, { parts: [{ text: "You are terse." }], role: "user" });
        assert.deepEqual(body.generationConfig, { temperature: 0.5, maxOutputTokens: 100 });
        assert.equal(mocks.gemini.requests.at(-1)!.path, "/v1beta/models/gemini-2.5-flash:generateContent");
      } else {
        assert.deepEqual(body.messages, [
          { role: "system", content: "You are terse." },
          { role: "user", content: "Say hello mock:tokens=5" },
        ]);
        assert.equal(body.temperature, 0.5);
      }
    });

    test("generateContentStream: text as it comes, the last chunk finishes with the usage; a stream record", async () => {
      const chunks: GenerateContentResponse[] = [];
      for await (const chunk of await ai.models.generateContentStream({
        model,
        contents: "Stream please mock:tokens=4",
      }))
        chunks.push(chunk);
      assert.ok(chunks.length >= 2, "more than one chunk");
      assert.equal(chunks.map((c) => c.text ?? "").join(""), REPLY(4));
      const last = chunks.at(-1)!;
      assert.equal(last.candidates?.[0]?.finishReason, "STOP");
      assert.ok(
        chunks.slice(0, -1).every((c) => !c.candidates?.[0]?.finishReason),
        "only the last chunk finishes",
      );
      for (const c of chunks) assert.equal(c.modelVersion, model);
      const row = await recordOf(last);
      assert.equal(row.api, "gemini");
      assert.equal(Number(row.stream), 1);
      assert.equal(last.usageMetadata?.candidatesTokenCount, 4);
      assertUsage(row, last.usageMetadata);
      assert.match(
        mocks[kind].requests.at(-1)!.path,
        kind === "gemini" ? /:streamGenerateContent\?alt=sse$/ : /chat\/completions$/,
      );
    });

    test("function calling: the call comes back, its response goes back, the model answers", async () => {
      const tools = [{ functionDeclarations: [weather] }];
      const user: Content = { role: "user", parts: [{ text: "Weather in Paris? mock:call=get_weather" }] };
      const first = await ai.models.generateContent({ model, contents: [user], config: { tools } });
      const calls = first.functionCalls ?? [];
      assert.equal(calls.length, 1);
      assert.equal(calls[0]!.name, "get_weather");
      assert.deepEqual(calls[0]!.args, { city: MOCK_TOOL_TEXT });
      if (kind === "openai") assert.match(calls[0]!.id ?? "", /.+/, "a translated call names its id");
      const modelTurn = first.candidates![0]!.content!;
      const second = await ai.models.generateContent({
        model,
        contents: [
          user,
          modelTurn,
          {
            role: "user",
            parts: [
              {
                functionResponse: {
                  ...(calls[0]!.id ? { id: calls[0]!.id } : {}),
                  name: "get_weather",
                  response: { temperature: "15C" },
                },
              },
            ],
          },
        ],
        config: { tools, maxOutputTokens: 10 },
      });
      assert.equal(second.text, REPLY(10));
      const body = lastBody(kind);
      if (kind === "gemini") {
        // the model turn went back as it came, its thought signature with it
        assert.ok(body.contents[1].parts[0].thoughtSignature, "the signature went back");
      } else {
        assert.equal(body.messages[1].tool_calls[0].id, calls[0]!.id);
        assert.deepEqual(body.messages[2], {
          role: "tool",
          tool_call_id: calls[0]!.id,
          content: '{"temperature":"15C"}',
        });
      }
      assertUsage(await recordOf(second), second.usageMetadata);
    });

    test("a streamed function call arrives whole", async () => {
      const parts = [];
      for await (const chunk of await ai.models.generateContentStream({
        model,
        contents: "Call it mock:call=get_weather",
        config: { tools: [{ functionDeclarations: [weather] }] },
      }))
        parts.push(...(chunk.candidates?.[0]?.content?.parts ?? []));
      const calls = parts.filter((p) => p.functionCall);
      assert.equal(calls.length, 1);
      assert.deepEqual(calls[0]!.functionCall!.args, { city: MOCK_TOOL_TEXT });
    });

    test("structured output: responseSchema asks for JSON of the schema", async () => {
      const response = await ai.models.generateContent({
        model,
        contents: "Describe a city",
        config: {
          responseMimeType: "application/json",
          responseSchema: {
            type: Type.OBJECT,
            properties: { name: { type: Type.STRING }, population: { type: Type.INTEGER } },
            required: ["name", "population"],
          },
        },
      });
      assert.deepEqual(JSON.parse(response.text!), { name: MOCK_TOOL_TEXT, population: 1 });
      if (kind === "openai")
        assert.deepEqual(lastBody("openai").response_format, {
          type: "json_schema",
          json_schema: {
            name: "output",
            schema: {
              type: "object",
              properties: { name: { type: "string" }, population: { type: "integer" } },
              required: ["name", "population"],
            },
          },
        });
    });

    test("a chat: the second turn sends the first turn's history", async () => {
      const chat = ai.chats.create({ model, config: { systemInstruction: "Be brief." } });
      const one = await chat.sendMessage({ message: "First mock:tokens=3" });
      assert.equal(one.text, REPLY(3));
      const two = await chat.sendMessage({ message: "Second mock:tokens=2" });
      assert.equal(two.text, REPLY(2));
      const body = lastBody(kind);
      if (kind === "gemini")
        assert.deepEqual(
          body.contents.map((c: Content) => [c.role, c.parts?.[0]?.text]),
          [
            ["user", "First mock:tokens=3"],
            ["model", REPLY(3)],
            ["user", "Second mock:tokens=2"],
          ],
        );
      else
        assert.deepEqual(body.messages, [
          { role: "system", content: "Be brief." },
          { role: "user", content: "First mock:tokens=3" },
          { role: "assistant", content: REPLY(3) },
          { role: "user", content: "Second mock:tokens=2" },
        ]);
      const row = await recordOf(two);
      assert.equal(row.api, "gemini");
      assertUsage(row, two.usageMetadata);
    });

    test("countTokens: the upstream's own count for a Gemini model, the local count otherwise; nothing recorded", async () => {
      const before = await gw.recorded("key_id", key.id);
      const counted = await ai.models.countTokens({ model, contents: "one two three four" });
      // the mock counts words; the gateway counts the canonical request with o200k_base
      const local = localPromptTokens({ model, messages: [{ role: "user", content: "one two three four" }] });
      assert.equal(counted.totalTokens, kind === "gemini" ? 4 : local);
      const res = await post(`/v1beta/models/${model}:countTokens`, {
        contents: [{ parts: [{ text: "one two three four" }] }],
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-gateway-count-source"), kind === "gemini" ? "upstream" : "local");
      assert.deepEqual((await gw.recorded("key_id", key.id)).calls, before.calls);
      if (kind === "gemini") {
        const whole = await post(`/v1beta/models/${model}:countTokens`, {
          generateContentRequest: { contents: [{ role: "user", parts: [{ text: "a b" }] }] },
        });
        assert.deepEqual((await whole.json()) as any, {
          totalTokens: 2,
          promptTokensDetails: [{ modality: "TEXT", tokenCount: 2 }],
        });
        assert.equal(
          mocks.gemini.requests.at(-1)!.body.generateContentRequest.model,
          "models/gemini-2.5-flash",
        );
      }
    });
  });
}

describe("the translation", () => {
  test("thought summaries asked for come as thought parts; the thinking budget is an effort", async () => {
    const response = await ai.models.generateContent({
      model: "gpt-test",
      contents: "Think first mock:reasoning mock:tokens=3",
      config: { maxOutputTokens: 400, thinkingConfig: { includeThoughts: true, thinkingBudget: 100 } },
    });
    const parts = response.candidates![0]!.content!.parts!;
    assert.equal(parts[0]!.thought, true);
    assert.ok(parts[0]!.text);
    assert.equal(response.text, REPLY(3), "the text leaves the thoughts out");
    assert.ok(response.usageMetadata?.thoughtsTokenCount, "the thinking is counted apart");
    assert.equal(lastBody("openai").reasoning_effort, "low");
    assertUsage(await recordOf(response), response.usageMetadata);
  });

  test("what the canonical request cannot carry is dropped with a notice; snake_case fields are read", async () => {
    const res = await post("/v1beta/models/gpt-test:generateContent", {
      system_instruction: { parts: [{ text: "Be kind." }] },
      contents: [{ role: "user", parts: [{ text: "Hi mock:tokens=2" }] }],
      generation_config: { max_output_tokens: 50, top_k: 40 },
      safety_settings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_NONE" }],
      tools: [{ google_search: {} }],
    });
    assert.equal(res.status, 200);
    assert.equal(
      res.headers.get("x-gateway-dropped"),
      "generationConfig.topK (topK), tools[0].googleSearch (googleSearch), safetySettings",
    );
    const body = lastBody("openai");
    assert.equal(body.messages[0].content, "Be kind.");
    assert.equal(body.max_tokens, 50);
    assert.equal(((await res.json()) as any).candidates[0].content.parts[0].text, REPLY(2));
  });

  test("a model id with / and : in the path, unencoded as the SDK sends it", async () => {
    const response = await ai.models.generateContent({ model: "meta/llama:3", contents: "Hi mock:tokens=2" });
    assert.equal(response.text, REPLY(2));
    assert.equal(response.modelVersion, "meta/llama:3");
  });
});

describe("the native path", () => {
  test("safety settings, Google's tools and thought summaries pass as they came; search grounding, billed per request, does not", async () => {
    const res = await post("/v1beta/models/gemini-test:generateContent", {
      contents: [{ role: "user", parts: [{ text: "Think mock:thinking=7 mock:tokens=2" }] }],
      safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_NONE" }],
      tools: [{ codeExecution: {} }, { googleSearch: {} }],
      generationConfig: { topK: 40, thinkingConfig: { includeThoughts: true } },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-gateway-dropped"), "tools[1].googleSearch");
    const answer = (await res.json()) as any;
    assert.deepEqual(answer.candidates[0].content.parts[0], {
      text: "Let me think this through.",
      thought: true,
    });
    assert.equal(answer.usageMetadata.thoughtsTokenCount, 7);
    const body = lastBody("gemini");
    assert.deepEqual(body.safetySettings, [
      { category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_NONE" },
    ]);
    assert.deepEqual(body.tools, [{ codeExecution: {} }]);
    assert.deepEqual(body.generationConfig, {
      topK: 40,
      thinkingConfig: { includeThoughts: true },
      maxOutputTokens: 512,
    });
    const row = await gw.record(res.headers.get("x-request-id")!);
    assert.equal(Number(row.reasoning_tokens), 7);
    assert.equal(Number(row.completion_tokens), 9);
  });

  test("the finishing event waits for the record: the raw stream ends with it", async () => {
    const res = await post("/v1beta/models/gemini-test:streamGenerateContent?alt=sse", {
      contents: [{ parts: [{ text: "Raw mock:tokens=3" }] }],
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^text\/event-stream/);
    const events = (await res.text())
      .split("\n\n")
      .filter((e) => e.startsWith("data: "))
      .map((e) => JSON.parse(e.slice(6)));
    assert.equal(events.length, 4);
    assert.equal(events.at(-1).candidates[0].finishReason, "STOP");
    for (const e of events) assert.equal(e.responseId, res.headers.get("x-request-id"));
  });
});

describe("keys", () => {
  const body = { contents: [{ parts: [{ text: "Hi mock:tokens=1" }] }] };
  test("x-goog-api-key, ?key= and Authorization: Bearer are each the gateway key", async () => {
    for (const [path, headers] of [
      ["/v1beta/models/gpt-test:generateContent", { "x-goog-api-key": key.secret }],
      [`/v1beta/models/gpt-test:generateContent?key=${key.secret}`, {}],
      ["/v1beta/models/gpt-test:generateContent", { authorization: `Bearer ${key.secret}` }],
    ] as const) {
      const res = await post(path, body, headers);
      assert.equal(res.status, 200, `${path} ${JSON.stringify(Object.keys(headers))}`);
    }
  });

  test("no key: 401 UNAUTHENTICATED in Google's envelope, naming where a key goes; recorded as gemini", async () => {
    const res = await post("/v1beta/models/gpt-test:generateContent", body, {});
    assert.equal(res.status, 401);
    const { error } = (await res.json()) as any;
    assert.equal(error.code, 401);
    assert.equal(error.status, "UNAUTHENTICATED");
    assert.match(error.message, /x-goog-api-key/);
    assert.equal(error.details[0].reason, "API_KEY_MISSING");
    const row = await gw.record(res.headers.get("x-request-id")!);
    assert.equal(row.api, "gemini");
    assert.equal(Number(row.http_status), 401);
  });
});

describe("errors through the SDK", () => {
  test("a wrong key: 401 UNAUTHENTICATED, reason API_KEY_INVALID", async () => {
    const { status, error } = await refused(
      client("sk-not-a-real-key-0000000000000000").models.generateContent({
        model: "gpt-test",
        contents: "Hi",
      }),
    );
    assert.equal(status, 401);
    assert.equal(error.status, "UNAUTHENTICATED");
    assert.equal(error.details[0].reason, "API_KEY_INVALID");
  });

  test("a model outside the plan: 404 NOT_FOUND", async () => {
    const { status, error } = await refused(
      ai.models.generateContent({ model: "not-in-plan", contents: "Hi" }),
    );
    assert.equal(status, 404);
    assert.equal(error.status, "NOT_FOUND");
    assert.equal(error.details[0].metadata.error_code, "model_not_found");
  });

  test("an exhausted quota: 429 RESOURCE_EXHAUSTED, for a stream too", async () => {
    const broke = client((await gw.key(await gw.account("gemini-broke", { quota: 0 }))).secret);
    const { status, error } = await refused(
      broke.models.generateContent({ model: "gpt-test", contents: "Hi" }),
    );
    assert.equal(status, 429);
    assert.equal(error.status, "RESOURCE_EXHAUSTED");
    assert.equal(error.details[0].reason, "INSUFFICIENT_QUOTA");
    const streamed = await refused(broke.models.generateContentStream({ model: "gpt-test", contents: "Hi" }));
    assert.equal(streamed.status, 429);
  });

  test("an upstream failure: Gemini's 503 becomes the gateway's, in Google's envelope", async () => {
    const { status, error } = await refused(
      ai.models.generateContent({ model: "gemini-test", contents: "Fail mock:status=503" }),
    );
    assert.ok(status >= 500, `status ${status}`);
    assert.ok(["UNAVAILABLE", "INTERNAL"].includes(error.status), error.status);
  });

  test("a failure mid-stream is an error event the SDK raises", async () => {
    await assert.rejects(async () => {
      for await (const _ of await ai.models.generateContentStream({
        model: "gemini-test",
        contents: "Then fail mock:tokens=5 mock:error-after=2",
      })) {
      }
    }, ApiError);
  });

  test("bad input: 400 INVALID_ARGUMENT naming the field; a stream without alt=sse is refused", async () => {
    const bad = await post("/v1beta/models/gpt-test:generateContent", {
      contents: [{ role: "assistant", parts: [{ text: "x" }] }],
    });
    assert.equal(bad.status, 400);
    const { error } = (await bad.json()) as any;
    assert.equal(error.status, "INVALID_ARGUMENT");
    assert.match(error.message, /contents\[0\]\.role/);
    assert.equal(error.details[1]["@type"], "type.googleapis.com/google.rpc.BadRequest");
    const noSse = await post("/v1beta/models/gpt-test:streamGenerateContent", {
      contents: [{ parts: [{ text: "x" }] }],
    });
    assert.equal(noSse.status, 400);
    assert.match(((await noSse.json()) as any).error.message, /alt=sse/);
  });

  test("unknown methods and paths under /v1beta answer in Google's envelope", async () => {
    const method = await post("/v1beta/models/gpt-test:embedContent", {});
    assert.equal(method.status, 404);
    assert.equal(((await method.json()) as any).error.status, "NOT_FOUND");
    const path = await post("/v1beta/cachedContents", {});
    assert.equal(path.status, 404);
    assert.equal(((await path.json()) as any).error.status, "NOT_FOUND");
  });
});

describe("API versions", () => {
  test("the SDK's v1beta (Gemini CLI's, older SDKs') is served as its default v1 is", async () => {
    const beta = new GoogleGenAI({
      apiKey: key.secret,
      httpOptions: { baseUrl: gw.origin, apiVersion: "v1beta" },
    });
    const response = await beta.models.generateContent({ model: "gpt-test", contents: "Hi mock:tokens=2" });
    assert.equal(response.text, REPLY(2));
    assert.equal((await recordOf(response)).api, "gemini");
    let text = "";
    for await (const chunk of await beta.models.generateContentStream({
      model: "gemini-test",
      contents: "Hi mock:tokens=3",
    }))
      text += chunk.text ?? "";
    assert.equal(text, REPLY(3));
    assert.equal((await beta.models.countTokens({ model: "gemini-test", contents: "a b c" })).totalTokens, 3);
  });

  test("GET /v1/models: Google's list to a Google key, OpenAI's to a Bearer one", async () => {
    const google = (await (
      await fetch(`${gw.origin}/v1/models`, { headers: { "x-goog-api-key": key.secret } })
    ).json()) as any;
    assert.equal(google.models[0].name, "models/gemini-test");
    const openai = (await (
      await fetch(`${gw.origin}/v1/models`, { headers: { authorization: `Bearer ${key.secret}` } })
    ).json()) as any;
    assert.equal(openai.object, "list");
    assert.equal(openai.data[0].id, "gemini-test");
    // a Google client without a key is told in Google's envelope where its key goes
    const missing = (await (await fetch(`${gw.origin}/v1/models?key=`)).json()) as any;
    assert.equal(missing.error.status, "UNAUTHENTICATED");
  });
});

describe("models", () => {
  test("models.list: the plan's models in Google's shape, paged", async () => {
    const names: string[] = [];
    for await (const m of await ai.models.list({ config: { pageSize: 2 } })) names.push(m.name!);
    assert.deepEqual(names, ["models/gemini-test", "models/gpt-test", "models/meta/llama:3"]);
    const one = await ai.models.get({ model: "gemini-test" });
    assert.equal(one.name, "models/gemini-test");
    assert.deepEqual(one.supportedActions, ["generateContent", "countTokens"]);
    const missing = await refused(ai.models.get({ model: "not-in-plan" }));
    assert.equal(missing.status, 404);
  });
});
