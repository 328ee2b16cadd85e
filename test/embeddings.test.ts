// POST /v1/embeddings end to end, with the official `openai` SDK's embeddings.create as the
// client: a real gateway (SQLite and PostgreSQL) in front of the OpenAI, Azure OpenAI and
// Gemini mocks and the demo provider. What a client sees (vectors, base64 as the SDK decodes
// it, usage, the envelope of every refusal), what each upstream is sent, and what the gateway
// keeps: records with api = embeddings, charges at the embedding price, limits, rate limits,
// fallbacks, metrics and the console's export.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI, { APIError } from "openai";
import { setBudget } from "../src/accounts/budgets.ts";
import { updateKey } from "../src/accounts/keys.ts";
import type { ConfigInput } from "../src/config/schema.ts";
import { formatUsd } from "../src/prices/usd.ts";
import type { CallRecordsTable } from "../src/store/schema.ts";
import {
  type StoreKind,
  startTestGateway,
  TEST_MODEL,
  type TestGateway,
  testConfig,
} from "./support/gateway.ts";
import { startMockGemini } from "./support/mock-gemini-upstream.ts";
import { float32Base64, type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { MOCK_DIMENSIONS, mockVector } from "./support/mock-provider.ts";
import { storeSuite } from "./support/postgres.ts";

const KEYS = {
  MOCK_UPSTREAM_KEY: "sk-upstream-secret-123",
  AZURE_KEY: "azure-key-0123456789abcdef",
  GEMINI_KEY: "gemini-key-0123456789abcdef",
};
/** text-embedding-3-small's price at the gateway: $0.02 per million input tokens */
const EMBED_PRICE = 0.02;

const STORES: StoreKind[] = (process.env.TEST_STORES ?? "sqlite,postgres")
  .split(",")
  .map((s) => s.trim())
  .filter((s): s is StoreKind => s === "sqlite" || s === "postgres");

/** the mocks count a text's tokens as its words */
const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

/** Awaits a call that must fail and returns the SDK's error. */
async function refused(call: Promise<unknown>): Promise<APIError> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof APIError, `expected an APIError, got ${String(err)}`);
    return err;
  }
  assert.fail("the call succeeded; it should have been refused");
}

function config(openai: MockUpstream, azure: MockUpstream, gemini: MockUpstream): Partial<ConfigInput> {
  const base = testConfig(openai);
  const azureBase = azure.url.replace(/\/v1$/, "");
  const timeouts = { connect_ms: 2_000, first_byte_ms: 3_000, idle_ms: 3_000, total_ms: 10_000 };
  return {
    providers: [
      ...(base.providers ?? []),
      // the same mock, each of its answers a 503: the first deployment of a model that fails over
      {
        id: "broken",
        type: "openai-compatible",
        base_url: openai.url,
        api_key_env: "MOCK_UPSTREAM_KEY",
        headers: { "x-mock-directives": "mock:status=503" },
        timeouts,
      },
      { id: "az", type: "azure-openai", base_url: azureBase, api_key_env: "AZURE_KEY", timeouts },
      { id: "az-v1", type: "azure-openai", base_url: azureBase, api_key_env: "AZURE_KEY", api_version: "v1" },
      { id: "gem", type: "gemini", base_url: gemini.url, api_key_env: "GEMINI_KEY", timeouts },
      { id: "gem-strict", type: "gemini", base_url: gemini.url, api_key_env: "GEMINI_KEY", strict: true },
    ],
    models: [
      ...(base.models ?? []),
      {
        id: "embed",
        kind: "embedding",
        provider: "mock",
        upstream_model: "text-embedding-3-small",
        pricing: { input: EMBED_PRICE },
      },
      { id: "embed-ada", kind: "embedding", provider: "mock", upstream_model: "text-embedding-ada-002" },
      { id: "embed-azure", kind: "embedding", provider: "az", upstream_model: "my-embedding-deployment" },
      {
        id: "embed-azure-v1",
        kind: "embedding",
        provider: "az-v1",
        upstream_model: "text-embedding-3-large",
      },
      { id: "embed-gemini", kind: "embedding", provider: "gem", upstream_model: "gemini-embedding-001" },
      {
        id: "embed-gemini-strict",
        kind: "embedding",
        provider: "gem-strict",
        upstream_model: "gemini-embedding-001",
      },
      {
        id: "embed-failover",
        kind: "embedding",
        routing: "ordered",
        deployments: [
          { provider: "broken", upstream_model: "text-embedding-3-small" },
          { provider: "mock", upstream_model: "text-embedding-3-small" },
        ],
      },
      // a deployment that embeds text only: token ids are refused before anything is sent
      {
        id: "embed-mixed",
        kind: "embedding",
        deployments: [
          { provider: "mock", upstream_model: "text-embedding-3-small" },
          { provider: "gem", upstream_model: "gemini-embedding-001" },
        ],
      },
      { id: "demo-embed", kind: "embedding", provider: "demo", upstream_model: "demo-embedding" },
    ],
    plans: [
      {
        id: "default",
        quota_tokens: 1_000_000_000,
        models: [
          TEST_MODEL,
          "demo",
          "embed",
          "embed-ada",
          "embed-azure",
          "embed-azure-v1",
          "embed-gemini",
          "embed-gemini-strict",
          "embed-failover",
          "embed-mixed",
          "demo-embed",
        ],
      },
      {
        id: "tight",
        quota_tokens: 1_000_000,
        models: ["embed"],
        rate_limits: { key: { rpm: 2 } },
      },
    ],
  };
}

for (const store of STORES) {
  describe(`POST /v1/embeddings (${store} store)`, await storeSuite(store), () => {
    let openai: MockUpstream;
    let azure: MockUpstream;
    let gemini: MockUpstream;
    let gw: TestGateway;
    let accountId: string;
    let client: OpenAI;
    let secret: string;

    const sdk = (apiKey: string) =>
      new OpenAI({ apiKey, baseURL: gw.baseURL, maxRetries: 0, timeout: 20_000 });

    before(async () => {
      openai = await startMockUpstream({ apiKey: KEYS.MOCK_UPSTREAM_KEY });
      azure = await startMockUpstream({ apiKey: KEYS.AZURE_KEY, azure: true });
      gemini = await startMockGemini({ apiKey: KEYS.GEMINI_KEY });
      gw = await startTestGateway({
        upstream: openai,
        store,
        env: KEYS,
        config: config(openai, azure, gemini),
      });
      accountId = await gw.account("embedder");
      secret = (await gw.key(accountId)).secret;
      client = sdk(secret);
    });

    after(async () => {
      await gw?.close();
      await Promise.all([openai?.close(), azure?.close(), gemini?.close()]);
    });

    /** The embeddings request the mock received last, at `path`. */
    const sent = (mock: MockUpstream, path: RegExp) => {
      const found = mock.requests.filter((r) => path.test(r.path)).at(-1);
      assert.ok(found, `the upstream received a request at ${path}`);
      return found;
    };

    async function record(requestId: string | null | undefined): Promise<CallRecordsTable> {
      assert.ok(requestId, "the answer carries x-request-id");
      return gw.record(requestId);
    }

    /** POSTs a raw body to the gateway's /v1/embeddings with the suite's key. */
    async function post(body: unknown, apiKey?: string) {
      const res = await fetch(`${gw.baseURL}/embeddings`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${apiKey ?? secret}`,
          "content-type": "application/json",
        },
        body: JSON.stringify(body),
      });
      return { res, body: (await res.json()) as any };
    }

    test("a string, with the SDK's defaults: base64 on the wire, floats decoded, usage and a record", async () => {
      const input = "The quick brown fox jumps over the lazy dog";
      openai.reset();
      const { data, response } = await client.embeddings.create({ model: "embed", input }).withResponse();
      // the SDK asks for base64 unless told otherwise, and the upstream was asked the same
      const upstream = sent(openai, /\/v1\/embeddings$/);
      assert.deepEqual(upstream.body, {
        model: "text-embedding-3-small",
        input,
        encoding_format: "base64",
      });
      assert.equal(upstream.headers.authorization, `Bearer ${KEYS.MOCK_UPSTREAM_KEY}`);
      assert.equal(data.object, "list");
      assert.equal(data.model, "embed", "the public model");
      assert.equal(data.data.length, 1);
      assert.equal(data.data[0]!.object, "embedding");
      assert.equal(data.data[0]!.index, 0);
      assert.deepEqual(data.data[0]!.embedding, mockVector(input, MOCK_DIMENSIONS));
      assert.deepEqual(data.usage, { prompt_tokens: words(input), total_tokens: words(input) });

      const row = await record(response.headers.get("x-request-id"));
      assert.equal(row.api, "embeddings");
      assert.equal(row.status, "ok");
      assert.equal(Number(row.http_status), 200);
      assert.equal(row.public_model, "embed");
      assert.equal(row.provider, "mock");
      assert.equal(row.upstream_model, "text-embedding-3-small");
      assert.equal(Number(row.prompt_tokens), words(input));
      assert.equal(Number(row.completion_tokens), 0);
      assert.equal(row.usage_source, "upstream");
      assert.equal(Number(row.stream), 0);
      assert.deepEqual(JSON.parse(row.params!), { inputs: 1, encoding_format: "base64" });
      // the reservation: the input's bytes, its marker overhead and the request's, no output
      assert.equal(Number(row.reserved_tokens), 32 + 8 + Buffer.byteLength(input));
      // $0.02 per million input tokens, charged and said in the header
      const cost = Math.round(words(input) * EMBED_PRICE * 1000);
      assert.equal(Number(row.cost_nanos), cost);
      assert.equal(row.cost_source, "config");
      assert.equal(response.headers.get("x-gateway-cost-usd"), formatUsd(cost));
    });

    test("texts, as floats and as base64 when asked for each", async () => {
      const input = ["first text", "second text here", "the third"];
      const floats = await client.embeddings.create({ model: "embed", input, encoding_format: "float" });
      assert.deepEqual(
        floats.data.map((d) => [d.index, d.embedding]),
        input.map((text, i) => [i, mockVector(text, MOCK_DIMENSIONS)]),
      );
      assert.equal(sent(openai, /\/v1\/embeddings$/).body.encoding_format, "float");
      assert.equal(floats.usage.prompt_tokens, 7);

      // asked for explicitly, base64 reaches the client as the upstream encoded it
      const b64 = await client.embeddings.create({ model: "embed", input, encoding_format: "base64" });
      for (const [i, d] of b64.data.entries()) {
        assert.equal(typeof d.embedding, "string");
        assert.equal(d.embedding as unknown as string, float32Base64(mockVector(input[i]!, MOCK_DIMENSIONS)));
      }
    });

    test("token ids, one array or several, are sent as given and counted by their length", async () => {
      const one = await client.embeddings
        .create({ model: "embed", input: [1, 2, 3, 4], encoding_format: "float" })
        .withResponse();
      assert.deepEqual(sent(openai, /\/v1\/embeddings$/).body.input, [1, 2, 3, 4]);
      assert.equal(one.data.data.length, 1);
      assert.deepEqual(one.data.data[0]!.embedding, mockVector([1, 2, 3, 4], MOCK_DIMENSIONS));
      assert.equal(one.data.usage.prompt_tokens, 4);
      const row = await record(one.response.headers.get("x-request-id"));
      assert.deepEqual(JSON.parse(row.params!), { inputs: 1, token_ids: true, encoding_format: "float" });
      assert.equal(Number(row.reserved_tokens), 32 + 8 + 4);

      const many = await client.embeddings.create({
        model: "embed",
        input: [
          [5, 6],
          [7, 8, 9],
        ],
      });
      assert.deepEqual(sent(openai, /\/v1\/embeddings$/).body.input, [
        [5, 6],
        [7, 8, 9],
      ]);
      assert.deepEqual(
        many.data.map((d) => d.embedding),
        [mockVector([5, 6], MOCK_DIMENSIONS), mockVector([7, 8, 9], MOCK_DIMENSIONS)],
      );
      assert.equal(many.usage.prompt_tokens, 5);
    });

    test("dimensions go upstream, and the upstream's refusal of them is the client's 400", async () => {
      const res = await client.embeddings.create({ model: "embed", input: "short", dimensions: 4 });
      assert.equal(sent(openai, /\/v1\/embeddings$/).body.dimensions, 4);
      assert.deepEqual(res.data[0]!.embedding, mockVector("short", 4));

      const err = await refused(client.embeddings.create({ model: "embed-ada", input: "x", dimensions: 4 }));
      assert.equal(err.status, 400);
      assert.match(err.message, /does not support specifying dimensions/);
      const row = await record(err.headers?.get("x-request-id"));
      assert.equal(row.status, "error");
      assert.equal(row.api, "embeddings");
      assert.equal(Number(row.total_tokens), 0, "a refused call is charged nothing");
    });

    test("Azure OpenAI: the deployment's embeddings path with api-version, or v1 with the model in the body", async () => {
      azure.reset();
      const res = await client.embeddings.create({ model: "embed-azure", input: ["a b", "c"] });
      const upstream = sent(azure, /embeddings/);
      assert.equal(upstream.path, "/openai/deployments/my-embedding-deployment/embeddings");
      assert.equal(upstream.headers["api-key"], KEYS.AZURE_KEY);
      assert.equal(upstream.headers.authorization, undefined);
      assert.equal(upstream.body.encoding_format, "base64");
      assert.deepEqual(
        res.data.map((d) => d.embedding),
        [mockVector("a b", MOCK_DIMENSIONS), mockVector("c", MOCK_DIMENSIONS)],
      );
      assert.equal(res.model, "embed-azure");
      assert.equal(res.usage.prompt_tokens, 3);

      await client.embeddings.create({ model: "embed-azure-v1", input: "hello", dimensions: 8 });
      const v1 = sent(azure, /embeddings/);
      assert.equal(v1.path, "/openai/v1/embeddings");
      assert.equal(v1.body.model, "text-embedding-3-large");
      assert.equal(v1.body.dimensions, 8);
    });

    test("Gemini: embedContent for one, batchEmbedContents for several, outputDimensionality, a local count marked estimated", async () => {
      gemini.reset();
      const one = await client.embeddings
        .create({ model: "embed-gemini", input: "one text to embed", dimensions: 12 })
        .withResponse();
      const single = sent(gemini, /:embedContent$/);
      assert.equal(single.path, "/v1beta/models/gemini-embedding-001:embedContent");
      assert.equal(single.headers["x-goog-api-key"], KEYS.GEMINI_KEY);
      assert.deepEqual(single.body, {
        content: { parts: [{ text: "one text to embed" }] },
        outputDimensionality: 12,
      });
      // Gemini answers floats: the gateway encoded them as base64 for the SDK, which decoded them
      assert.deepEqual(one.data.data[0]!.embedding, mockVector("one text to embed", 12));
      const row = await record(one.response.headers.get("x-request-id"));
      assert.equal(row.usage_source, "estimated");
      assert.equal(row.provider, "gem");
      // o200k_base: "one text to embed" is 4 tokens
      assert.equal(Number(row.prompt_tokens), 4);
      assert.equal(one.data.usage.prompt_tokens, 4);

      // 150 inputs: two batches (Gemini takes at most 100 a batch), the vectors in input order
      const input = Array.from({ length: 150 }, (_, i) => `text number ${i}`);
      gemini.reset();
      const many = await client.embeddings.create({ model: "embed-gemini", input, encoding_format: "float" });
      const batches = gemini.requests.filter((r) => r.path.endsWith(":batchEmbedContents"));
      assert.deepEqual(
        batches.map((b) => b.body.requests.length).sort((a: number, b: number) => b - a),
        [100, 50],
      );
      assert.deepEqual(batches[0]!.body.requests[0], {
        model: "models/gemini-embedding-001",
        content: { parts: [{ text: batches[0]!.body.requests[0].content.parts[0].text }] },
      });
      assert.equal(many.data.length, 150);
      for (const [i, d] of many.data.entries()) {
        assert.equal(d.index, i);
        assert.deepEqual(d.embedding, mockVector(input[i]!, MOCK_DIMENSIONS));
      }

      // base64 asked for explicitly: the gateway's encoding of Gemini's floats, as OpenAI's
      const b64 = await client.embeddings.create({
        model: "embed-gemini",
        input: "x y",
        encoding_format: "base64",
      });
      assert.equal(
        b64.data[0]!.embedding as unknown as string,
        float32Base64(mockVector("x y", MOCK_DIMENSIONS)),
      );
    });

    test("Gemini: token ids refused before anything is sent; fields it cannot take dropped with a notice, or refused when strict", async () => {
      gemini.reset();
      const err = await refused(client.embeddings.create({ model: "embed-gemini", input: [1, 2, 3] }));
      assert.equal(err.status, 400);
      assert.equal(err.code, "invalid_request");
      assert.equal(err.param, "input");
      assert.match(err.message, /embeds text only/);
      // a model with any text-only deployment refuses them, whichever deployment routing would pick
      const mixed = await refused(client.embeddings.create({ model: "embed-mixed", input: [[1, 2]] }));
      assert.equal(mixed.param, "input");
      assert.equal(gemini.requests.length, 0);

      const { res, body } = await post({
        model: "embed-gemini",
        input: "hi",
        task_type: "RETRIEVAL_QUERY",
        user: "u1",
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-gateway-dropped"), "task_type");
      assert.deepEqual(sent(gemini, /:embedContent$/).body, { content: { parts: [{ text: "hi" }] } });
      assert.equal(body.data.length, 1);
      const row = await record(res.headers.get("x-request-id"));
      assert.deepEqual(JSON.parse(row.params!).dropped, ["task_type"]);

      const strict = await post({ model: "embed-gemini-strict", input: "hi", task_type: "RETRIEVAL_QUERY" });
      assert.equal(strict.res.status, 400);
      assert.equal(strict.body.error.param, "task_type");
      assert.match(strict.body.error.message, /not supported by gem-strict/);
    });

    test("the demo embeds offline: deterministic unit vectors, similar texts alike", async () => {
      const res = await client.embeddings.create({
        model: "demo-embed",
        input: ["the cat sat on the mat", "the cat sat on a mat", "quarterly revenue grew"],
        encoding_format: "float",
      });
      const [a, b, c] = res.data.map((d) => d.embedding);
      assert.equal(a!.length, 64);
      const dot = (x: number[], y: number[]) => x.reduce((s, v, i) => s + v * y[i]!, 0);
      assert.ok(Math.abs(dot(a!, a!) - 1) < 1e-5, "unit length");
      assert.ok(dot(a!, b!) > dot(a!, c!), "the near paraphrase is nearer");
      const again = await client.embeddings.create({ model: "demo-embed", input: "the cat sat on the mat" });
      assert.deepEqual(again.data[0]!.embedding, a, "deterministic, and the same through base64");
      assert.ok(res.usage.prompt_tokens > 0);
    });

    test("each API refuses the other kind of model; the model list has both", async () => {
      const chat = await refused(
        client.chat.completions.create({ model: "embed", messages: [{ role: "user", content: "hi" }] }),
      );
      assert.equal(chat.status, 400);
      assert.equal(chat.code, "wrong_model_kind");
      assert.equal(chat.param, "model");
      assert.match(chat.message, /'embed' is an embedding model: call it through POST \/v1\/embeddings/);
      assert.equal((await record(chat.headers?.get("x-request-id"))).api, "chat.completions");

      const embed = await refused(client.embeddings.create({ model: TEST_MODEL, input: "hi" }));
      assert.equal(embed.status, 400);
      assert.equal(embed.code, "wrong_model_kind");
      assert.equal(embed.param, "model");
      assert.match(embed.message, /is a chat model/);
      const row = await record(embed.headers?.get("x-request-id"));
      assert.equal(row.api, "embeddings");
      assert.equal(row.error_code, "wrong_model_kind");

      // Anthropic's Messages API refuses it too, in its own envelope
      const messages = await fetch(`${gw.baseURL}/messages`, {
        method: "POST",
        headers: { "x-api-key": secret, "content-type": "application/json" },
        body: JSON.stringify({ model: "embed", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
      });
      assert.equal(messages.status, 400);
      assert.equal(((await messages.json()) as any).type, "error");

      const unknown = await refused(client.embeddings.create({ model: "nope", input: "hi" }));
      assert.equal(unknown.status, 404);
      assert.equal(unknown.code, "model_not_found");

      const ids = (await client.models.list()).data.map((m) => m.id);
      assert.ok(ids.includes("embed") && ids.includes(TEST_MODEL) && ids.includes("demo-embed"));
    });

    test("bad input is a 400 in OpenAI's envelope naming the parameter, recorded, never sent upstream", async () => {
      openai.reset();
      const cases: Array<[unknown, string | null, RegExp]> = [
        [{ model: "embed" }, "input", /Missing required parameter: 'input'/],
        [{ model: "embed", input: null }, "input", /Missing required parameter/],
        [{ model: "embed", input: [] }, "input", /must not be empty/],
        [{ model: "embed", input: "" }, "input", /must not be empty/],
        [{ model: "embed", input: ["ok", ""] }, "input[1]", /must not be empty/],
        [{ model: "embed", input: 42 }, "input", /must be a string, an array of strings/],
        [{ model: "embed", input: ["a", 1] }, "input[1]", /expected string/],
        [{ model: "embed", input: [[1, -2]] }, "input[0][1]", /expected number to be >=0/],
        [{ model: "embed", input: [[]] }, "input[0]", /must not be empty/],
        [{ model: "embed", input: Array(2049).fill("a") }, "input", /at most 2048 inputs, got 2049/],
        [{ model: "embed", input: "a", encoding_format: "int8" }, "encoding_format", /float.*base64/],
        [{ model: "embed", input: "a", dimensions: 0 }, "dimensions", /too small/i],
        [{ model: "embed", input: "a", dimensions: 1.5 }, "dimensions", /expected int/],
        [{ model: "embed", input: "a", user: 7 }, "user", /expected string/],
        [{ input: "a" }, "model", /expected string/],
        [["not", "an", "object"], null, /must be a JSON object/],
      ];
      for (const [body, param, message] of cases) {
        const { res, body: answer } = await post(body);
        const what = JSON.stringify(body).slice(0, 80);
        assert.equal(res.status, 400, what);
        assert.equal(answer.error.type, "invalid_request_error", what);
        assert.equal(answer.error.code, "invalid_request", what);
        assert.equal(answer.error.param, param, what);
        assert.match(answer.error.message, message, what);
        const row = await record(res.headers.get("x-request-id"));
        assert.equal(row.api, "embeddings");
        assert.equal(row.status, "error");
      }
      assert.equal(openai.requests.length, 0, "nothing reached the upstream");

      // null is "not given" for optional fields, as in chat completions
      const nulls = await post({
        model: "embed",
        input: "a",
        dimensions: null,
        encoding_format: null,
        user: null,
      });
      assert.equal(nulls.res.status, 200);
      assert.ok(Array.isArray(nulls.body.data[0].embedding));
      assert.deepEqual(sent(openai, /\/v1\/embeddings$/).body, {
        model: "text-embedding-3-small",
        input: "a",
      });
    });

    test("fields the gateway does not read go on to an OpenAI-shaped upstream, which judges them", async () => {
      // OpenAI refuses what it does not know: its 400 is the client's, with its words
      const { res, body } = await post({ model: "embed", input: "a", input_type: "query" });
      assert.equal(res.status, 400);
      assert.equal(sent(openai, /\/v1\/embeddings$/).body.input_type, "query");
      assert.match(body.error.message, /Unrecognized request argument supplied: input_type/);
      assert.equal(res.headers.get("x-gateway-dropped"), null);
    });

    test("a key limit and an account quota are enforced on the input's bound", async () => {
      const account = await gw.account("embed-limits");
      const key = await gw.key(account, { limit: 45 });
      const limited = sdk(key.secret);
      // 32 + 8 + 5 bytes = 45: fits exactly; it is charged the 1 token the upstream counted
      const ok = await limited.embeddings.create({ model: "embed", input: "hello" });
      assert.equal(ok.usage.prompt_tokens, 1);
      // now 44 are left: the same request's bound of 45 does not fit
      const err = await refused(limited.embeddings.create({ model: "embed", input: "hello" }));
      assert.equal(err.status, 429);
      assert.equal(err.code, "key_limit_exceeded");
      assert.match(err.message, /44 tokens left/);
      const row = await record(err.headers?.get("x-request-id"));
      assert.equal(row.api, "embeddings");
      assert.equal(row.error_code, "key_limit_exceeded");

      const small = await gw.account("embed-quota", { quota: 20 });
      const quota = await refused(
        sdk((await gw.key(small)).secret).embeddings.create({ model: "embed", input: "hi" }),
      );
      assert.equal(quota.status, 429);
      assert.equal(quota.code, "insufficient_quota");
      assert.deepEqual(await gw.recorded("account_id", small), { tokens: 0, calls: 1 });
    });

    test("a budget holds the input's bound at the embedding price; the record keeps the cost", async () => {
      const account = await gw.account("embed-budget");
      const key = await gw.key(account);
      const budgeted = sdk(key.secret);
      const input = "x ".repeat(500).trim(); // 999 bytes: a bound of 1,039 tokens
      const bound = 32 + 8 + 999;
      const held = Math.ceil(bound * EMBED_PRICE * 1000) + 3; // nanodollars, as the ledger rounds
      // one nanodollar short of the hold: refused before anything is sent
      await setBudget(gw.gateway.deps.store.db, "api_keys", key.id, held - 1, "none");
      gw.gateway.deps.keys.clear();
      const err = await refused(budgeted.embeddings.create({ model: "embed", input }));
      assert.equal(err.status, 429);
      assert.equal(err.code, "budget_exceeded");
      // enough: charged the 500 tokens counted, at $0.02 per million
      await setBudget(gw.gateway.deps.store.db, "api_keys", key.id, held, "none");
      gw.gateway.deps.keys.clear();
      const { data, response } = await budgeted.embeddings.create({ model: "embed", input }).withResponse();
      assert.equal(data.usage.prompt_tokens, 500);
      const row = await record(response.headers.get("x-request-id"));
      assert.equal(Number(row.cost_nanos), 500 * EMBED_PRICE * 1000);
      const spent = await gw.gateway.deps.store.db
        .selectFrom("api_keys")
        .select("spent_nanos")
        .where("id", "=", key.id)
        .executeTakeFirstOrThrow();
      assert.equal(Number(spent.spent_nanos), 500 * EMBED_PRICE * 1000);
    });

    test("rate limits count embeddings calls: the plan's rpm refuses the third in a minute", async () => {
      const account = await gw.account("embed-rpm", { plan: "tight" });
      const limited = sdk((await gw.key(account)).secret);
      await limited.embeddings.create({ model: "embed", input: "a" });
      const second = await limited.embeddings.create({ model: "embed", input: "b" }).withResponse();
      assert.equal(second.response.headers.get("x-ratelimit-limit-requests"), "2");
      const err = await refused(limited.embeddings.create({ model: "embed", input: "c" }));
      assert.equal(err.status, 429);
      assert.equal(err.code, "rate_limit_exceeded");
      assert.ok(Number(err.headers?.get("retry-after")) >= 1);
    });

    test("a failing deployment fails over to the next; the record lists both attempts", async () => {
      const { data, response } = await client.embeddings
        .create({ model: "embed-failover", input: "fail over please" })
        .withResponse();
      assert.deepEqual(data.data[0]!.embedding, mockVector("fail over please", MOCK_DIMENSIONS));
      assert.equal(response.headers.get("x-gateway-attempts"), "2");
      const row = await record(response.headers.get("x-request-id"));
      assert.equal(row.provider, "mock");
      const attempts = JSON.parse(row.attempts!);
      assert.deepEqual(
        attempts.map((a: { provider: string; outcome: string; status: number | null }) => [
          a.provider,
          a.outcome,
          a.status,
        ]),
        [
          ["broken", "server_error", 503],
          ["mock", "ok", null],
        ],
      );
    });

    test("an upstream that reports no usage: the inputs counted locally, marked estimated", async () => {
      const input = "count me locally mock:no-usage";
      const { data, response } = await client.embeddings.create({ model: "embed", input }).withResponse();
      const row = await record(response.headers.get("x-request-id"));
      assert.equal(row.usage_source, "estimated");
      assert.ok(Number(row.prompt_tokens) > 0);
      assert.equal(data.usage.prompt_tokens, Number(row.prompt_tokens));
    });

    test("a client that leaves while the upstream works: recorded as gone, charged the inputs it sent", async () => {
      const account = await gw.account("embed-gone");
      const key = await gw.key(account);
      const input = "wait for me mock:hang";
      const before = openai.aborted();
      const leave = new AbortController();
      const pending = fetch(`${gw.baseURL}/embeddings`, {
        method: "POST",
        headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "embed", input }),
        signal: leave.signal,
      }).catch(() => undefined);
      const until = Date.now() + 5_000;
      while (openai.inFlight() === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
      leave.abort();
      await pending;
      let row: CallRecordsTable | undefined;
      while (!row && Date.now() < until) {
        row = await gw.gateway.deps.store.db
          .selectFrom("call_records")
          .selectAll()
          .where("account_id", "=", account)
          .executeTakeFirst();
        if (!row) await new Promise((r) => setTimeout(r, 20));
      }
      assert.ok(row, "the call was recorded");
      assert.equal(row.api, "embeddings");
      assert.equal(row.status, "client_disconnect");
      assert.equal(row.usage_source, "estimated");
      assert.ok(Number(row.prompt_tokens) > 0, "charged the inputs the upstream read");
      assert.deepEqual(await gw.ledger("key", key.id), {
        used: Number(row.total_tokens),
        reserved: 0,
      });
      while (openai.aborted() === before && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
      assert.equal(openai.aborted(), before + 1, "the upstream call was cut");
    });

    test("metrics count embeddings calls and tokens under api=embeddings", async () => {
      await client.embeddings.create({ model: "embed", input: "metered text" });
      const text = await (await fetch(`${gw.origin}/metrics`)).text();
      const line = (prefix: string) => text.split("\n").find((l) => l.startsWith(prefix));
      assert.ok(line('gateway_calls_total{api="embeddings",status="ok"} '), "calls by api");
      assert.ok(line('gateway_tokens_total{model="embed",kind="prompt",api="embeddings"} '), "tokens by api");
      assert.ok(line('gateway_cost_usd_total{model="embed"} '), "cost by model");
    });

    test("the console's export has the embeddings calls, CSV and JSON Lines", async () => {
      const account = await gw.account("embed-export");
      const key = await gw.key(account);
      const owner = await gw.consoleUser(account, { role: "owner" });
      const res = await sdk(key.secret)
        .embeddings.create({ model: "embed", input: "exported" })
        .withResponse();
      const id = res.response.headers.get("x-request-id")!;
      const csv = await (
        await fetch(`${gw.origin}/api/console/records/export?format=csv`, {
          headers: { cookie: owner.cookie },
        })
      ).text();
      const [header, ...rows] = csv.trim().split("\r\n");
      // the columns' order is console-api-records.test.ts's to keep; `api` comes after `cost_source`
      assert.match(header!, /,cost_source,api(,|$)/);
      const row = rows.find((r) => r.startsWith(`${id},`));
      assert.ok(row, "the call is in the CSV");
      assert.match(row, /,config,embeddings(,|$)/);
      const jsonl = await (
        await fetch(`${gw.origin}/api/console/records/export?format=jsonl`, {
          headers: { cookie: owner.cookie },
        })
      ).text();
      const line = jsonl
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l))
        .find((l) => l.request_id === id);
      assert.equal(line.api, "embeddings");
      assert.equal(line.prompt_tokens, 1);
    });

    test("a disabled key and a missing key are refused before the body is read, recorded as embeddings", async () => {
      const account = await gw.account("embed-auth");
      const key = await gw.key(account);
      await updateKey(gw.gateway.deps.store.db, key.id, { disabled: true });
      gw.gateway.deps.keys.clear();
      const err = await refused(sdk(key.secret).embeddings.create({ model: "embed", input: "a" }));
      assert.equal(err.status, 403);
      assert.equal(err.code, "key_disabled");
      assert.equal((await record(err.headers?.get("x-request-id"))).api, "embeddings");
      const missing = await fetch(`${gw.baseURL}/embeddings`, { method: "POST", body: "{}" });
      assert.equal(missing.status, 401);
      assert.equal(((await missing.json()) as any).error.code, "missing_api_key");
    });
  });
}
