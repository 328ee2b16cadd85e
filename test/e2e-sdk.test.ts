// End to end with the official `openai` SDK as the client: a real gateway (SQLite and
// PostgreSQL stores) in front of the mock upstream. What an application sees: answers, usage,
// streams, tool calls, the model list, every auth and quota refusal as the SDK's typed error,
// what reaches the upstream (and what must not), records for every chat call, clean logs.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI, {
  APIError,
  AuthenticationError,
  BadRequestError,
  type ClientOptions,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
} from "openai";
import type { ChatCompletionChunk, ChatCompletionTool } from "openai/resources/chat/completions";
import { updateAccount } from "../src/accounts/accounts.ts";
import { updateKey } from "../src/accounts/keys.ts";
import type { CallRecordsTable } from "../src/store/schema.ts";
import { type StoreKind, startTestGateway, TEST_MODEL, type TestGateway } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { storeSuite } from "./support/postgres.ts";

const UPSTREAM_KEY = "sk-upstream-secret-123";
/** what the mock puts in its HTTP 500 message, besides the upstream key */
const UPSTREAM_INTERNAL_HOST = "10.0.0.5";
/** the mock's reply words, in order (one token each) */
const MOCK_WORDS = "Hello world this is a mock reply from the model with some simple words for testing".split(
  " ",
);
const mockText = (tokens: number): string =>
  Array.from({ length: tokens }, (_, i) => MOCK_WORDS[i % MOCK_WORDS.length]).join(" ");
/** the mock counts prompt tokens as whitespace-separated words over all messages */
const words = (...texts: string[]): number => texts.join(" ").split(/\s+/).filter(Boolean).length;

const STORES: StoreKind[] = (process.env.TEST_STORES ?? "sqlite,postgres")
  .split(",")
  .map((s) => s.trim())
  .filter((s): s is StoreKind => s === "sqlite" || s === "postgres");

const weatherTool: ChatCompletionTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Current weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};

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

/** Polls until `attempt` yields a value; bounded so a broken cache invalidation fails, not hangs. */
async function eventually<T>(
  what: string,
  attempt: () => Promise<T | undefined>,
  limitMs = 3_000,
): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await attempt();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`still not ${what} after ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

for (const store of STORES) {
  describe(`openai SDK against the gateway (${store} store)`, await storeSuite(store), () => {
    let upstream: MockUpstream;
    let gw: TestGateway;
    let accountId: string;
    let key: { id: string; secret: string };
    let client: OpenAI;
    /** every secret a client used in this suite: none may reach a log line or the upstream */
    const secrets: string[] = [UPSTREAM_KEY];

    const sdk = (apiKey: string, extra: ClientOptions = {}): OpenAI =>
      new OpenAI({ apiKey, baseURL: gw.baseURL, maxRetries: 0, timeout: 20_000, ...extra });

    async function newKey(acc: string, options: { limit?: number | null } = {}) {
      const k = await gw.key(acc, options);
      secrets.push(k.secret);
      return k;
    }

    async function record(requestId: string | null | undefined): Promise<CallRecordsTable> {
      assert.ok(requestId, "the response carries x-request-id");
      const row = await gw.gateway.deps.store.db
        .selectFrom("call_records")
        .selectAll()
        .where("request_id", "=", requestId)
        .executeTakeFirst();
      assert.ok(row, `a call record exists for request ${requestId}`);
      return row;
    }

    /** The typed error, its envelope fields, and the call record of a refused chat call. */
    async function assertRefusedChat(
      err: APIError,
      expected: { cls: new (...args: any[]) => APIError; status: number; code: string; type: string },
    ): Promise<CallRecordsTable> {
      assert.ok(err instanceof expected.cls, `expected ${expected.cls.name}, got ${err.constructor.name}`);
      assert.equal(err.status, expected.status);
      assert.equal(err.code, expected.code);
      assert.equal(err.type, expected.type);
      const rid = err.headers?.get("x-request-id");
      assert.equal(err.requestID, rid);
      const row = await record(rid);
      assert.equal(row.status, "error");
      assert.equal(Number(row.http_status), expected.status);
      assert.equal(row.error_code, expected.code);
      return row;
    }

    before(async () => {
      upstream = await startMockUpstream({ apiKey: UPSTREAM_KEY });
      gw = await startTestGateway({ upstream, store });
      accountId = await gw.account("e2e");
      key = await newKey(accountId);
      client = sdk(key.secret);
    });

    after(async () => {
      await gw?.close();
      await upstream?.close();
    });

    test("non-streaming: content, public model name, usage equal to the upstream's, a call record", async () => {
      const system = "You are a terse assistant.";
      const user = "Say hello mock:tokens=5";
      const { data, response, request_id } = await client.chat.completions
        .create({
          model: TEST_MODEL,
          messages: [
            { role: "system", content: system },
            { role: "user", content: user },
          ],
        })
        .withResponse();
      assert.equal(response.status, 200);
      assert.equal(data.object, "chat.completion");
      assert.equal(data.model, TEST_MODEL, "the public model name, not the upstream's mock-model");
      assert.match(data.id, /^chatcmpl-/);
      assert.equal(data.choices.length, 1);
      assert.equal(data.choices[0]!.message.role, "assistant");
      assert.equal(data.choices[0]!.message.content, mockText(5));
      assert.equal(data.choices[0]!.finish_reason, "stop");
      const prompt = words(system, user);
      assert.deepEqual(
        {
          prompt_tokens: data.usage?.prompt_tokens,
          completion_tokens: data.usage?.completion_tokens,
          total_tokens: data.usage?.total_tokens,
        },
        { prompt_tokens: prompt, completion_tokens: 5, total_tokens: prompt + 5 },
      );

      const rid = response.headers.get("x-request-id");
      assert.equal(request_id, rid);
      const row = await record(rid);
      assert.equal(row.status, "ok");
      assert.equal(Number(row.http_status), 200);
      assert.equal(row.account_id, accountId);
      assert.equal(row.key_id, key.id);
      assert.equal(row.public_model, TEST_MODEL);
      assert.equal(row.upstream_model, "mock-model");
      assert.equal(Number(row.stream), 0);
      assert.equal(row.usage_source, "upstream");
      assert.deepEqual(
        [Number(row.prompt_tokens), Number(row.completion_tokens), Number(row.total_tokens)],
        [prompt, 5, prompt + 5],
      );
    });

    test("streaming: chunks reassemble to the text; no usage chunk unless include_usage", async () => {
      const { data: stream, response } = await client.chat.completions
        .create({
          model: TEST_MODEL,
          messages: [{ role: "user", content: "Stream it mock:tokens=7" }],
          stream: true,
        })
        .withResponse();
      assert.match(response.headers.get("content-type") ?? "", /^text\/event-stream/);
      const chunks: ChatCompletionChunk[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      assert.ok(chunks.length >= 3, "role chunk, content chunks, finish chunk");
      let text = "";
      for (const c of chunks) {
        assert.equal(c.object, "chat.completion.chunk");
        assert.equal(c.model, TEST_MODEL);
        assert.equal(c.id, chunks[0]!.id, "one id for the whole stream");
        assert.equal(c.usage ?? null, null, "no usage without stream_options.include_usage");
        assert.equal(c.choices.length, 1, "no usage-only chunk without stream_options.include_usage");
        text += c.choices[0]!.delta.content ?? "";
      }
      assert.match(chunks[0]!.id, /^chatcmpl-/);
      assert.equal(text, mockText(7));
      assert.equal(chunks.at(-1)!.choices[0]!.finish_reason, "stop");

      // The gateway still bills what the upstream reported.
      const row = await record(response.headers.get("x-request-id"));
      assert.equal(row.status, "ok");
      assert.equal(Number(row.stream), 1);
      assert.equal(row.usage_source, "upstream");
      assert.equal(Number(row.completion_tokens), 7);
    });

    test("streaming with include_usage: exactly one usage chunk, last, with empty choices", async () => {
      const user = "Stream with usage mock:tokens=4";
      const { data: stream, response } = await client.chat.completions
        .create({
          model: TEST_MODEL,
          messages: [{ role: "user", content: user }],
          stream: true,
          stream_options: { include_usage: true },
        })
        .withResponse();
      const chunks: ChatCompletionChunk[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      const withUsage = chunks.filter((c) => c.usage != null);
      assert.equal(withUsage.length, 1, "one chunk carries usage");
      const last = chunks.at(-1)!;
      assert.equal(withUsage[0], last, "the usage chunk is the last one");
      assert.deepEqual(last.choices, []);
      const prompt = words(user);
      assert.deepEqual(
        {
          prompt_tokens: last.usage?.prompt_tokens,
          completion_tokens: last.usage?.completion_tokens,
          total_tokens: last.usage?.total_tokens,
        },
        { prompt_tokens: prompt, completion_tokens: 4, total_tokens: prompt + 4 },
      );
      const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
      assert.equal(text, mockText(4));
      for (const c of chunks) assert.equal(c.model, TEST_MODEL);
      const row = await record(response.headers.get("x-request-id"));
      assert.equal(Number(row.total_tokens), prompt + 4);
    });

    for (const includeUsage of [false, true]) {
      test(`raw SSE (include_usage ${includeUsage}): data: framing, ends with data: [DONE]`, async () => {
        const body: Record<string, unknown> = {
          model: TEST_MODEL,
          messages: [{ role: "user", content: "raw stream mock:tokens=3" }],
          stream: true,
        };
        if (includeUsage) body.stream_options = { include_usage: true };
        const res = await fetch(`${gw.baseURL}/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(20_000),
        });
        assert.equal(res.status, 200);
        assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
        const text = await res.text();
        // written before the response finishes (DESIGN: one chat completion, step 6)
        const row = await record(res.headers.get("x-request-id"));
        assert.equal(row.status, "ok");
        assert.ok(
          text.endsWith("data: [DONE]\n\n"),
          `the stream ends with data: [DONE]: ${JSON.stringify(text.slice(-80))}`,
        );
        const events = text.slice(0, -2).split("\n\n");
        for (const e of events)
          assert.ok(e.startsWith("data: "), `event framed as data: …: ${JSON.stringify(e)}`);
        const payloads = events.map((e) => e.slice(6));
        assert.equal(payloads.filter((p) => p === "[DONE]").length, 1, "[DONE] once");
        const chunks = payloads.slice(0, -1).map((p) => JSON.parse(p) as ChatCompletionChunk);
        const usageChunks = chunks.filter((c) => c.usage != null);
        assert.equal(usageChunks.length, includeUsage ? 1 : 0);
        if (includeUsage) assert.deepEqual(chunks.at(-1)!.choices, []);
        else
          for (const c of chunks)
            assert.ok(!("usage" in c) || c.usage === null, "no usage key without include_usage");
      });
    }

    test("tool call, streamed: deltas reassemble into one get_weather call", async () => {
      const { data: stream, response } = await client.chat.completions
        .create({
          model: TEST_MODEL,
          messages: [{ role: "user", content: "Weather in Paris? mock:tool" }],
          tools: [weatherTool],
          stream: true,
        })
        .withResponse();
      const calls = new Map<number, { id: string; type: string; name: string; args: string }>();
      let finish: string | null = null;
      for await (const chunk of stream) {
        const choice = chunk.choices[0];
        if (!choice) continue;
        if (choice.finish_reason) finish = choice.finish_reason;
        for (const tc of choice.delta.tool_calls ?? []) {
          const call = calls.get(tc.index) ?? { id: "", type: "", name: "", args: "" };
          if (tc.id) call.id = tc.id;
          if (tc.type) call.type = tc.type;
          call.name += tc.function?.name ?? "";
          call.args += tc.function?.arguments ?? "";
          calls.set(tc.index, call);
        }
      }
      assert.equal(finish, "tool_calls");
      assert.equal(calls.size, 1);
      const call = calls.get(0)!;
      assert.match(call.id, /^call_/);
      assert.equal(call.type, "function");
      assert.equal(call.name, "get_weather");
      assert.deepEqual(JSON.parse(call.args), { city: "Paris" });
      const row = await record(response.headers.get("x-request-id"));
      assert.equal(row.status, "ok");
      assert.ok(Number(row.completion_tokens) > 0, "tool-call output is billed");
    });

    test("tool call through the SDK's stream helper and non-streaming", async () => {
      const runner = client.chat.completions.stream({
        model: TEST_MODEL,
        messages: [{ role: "user", content: "Weather in Paris? mock:tool" }],
        tools: [weatherTool],
        stream_options: { include_usage: true },
      });
      const final = await runner.finalChatCompletion();
      const streamed = final.choices[0]!.message.tool_calls?.[0];
      assert.ok(streamed && streamed.type === "function");
      assert.equal(streamed.function.name, "get_weather");
      assert.equal(streamed.function.arguments, '{"city":"Paris"}');
      assert.ok((final.usage?.completion_tokens ?? 0) > 0);

      const plain = await client.chat.completions.create({
        model: TEST_MODEL,
        messages: [{ role: "user", content: "Weather in Paris? mock:tool" }],
        tools: [weatherTool],
      });
      assert.equal(plain.choices[0]!.finish_reason, "tool_calls");
      const call = plain.choices[0]!.message.tool_calls?.[0];
      assert.ok(call && call.type === "function");
      assert.equal(call.function.name, "get_weather");
      assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris" });
      assert.equal(plain.model, TEST_MODEL);
    });

    test("a mid-stream upstream failure surfaces as an error, not as a normal end", async () => {
      const { data: stream, response } = await client.chat.completions
        .create({
          model: TEST_MODEL,
          messages: [{ role: "user", content: "break please mock:tokens=10 mock:drop-after=2" }],
          stream: true,
        })
        .withResponse();
      let text = "";
      const err = await refused(
        (async () => {
          for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
        })(),
      );
      assert.ok(mockText(10).startsWith(text), "what arrived is a prefix of the answer");
      assert.ok(text.length < mockText(10).length, "the answer was cut");
      assert.equal(err.code, "upstream_error");
      const row = await record(response.headers.get("x-request-id"));
      assert.equal(row.status, "upstream_error");
      assert.equal(row.error_code, "upstream_error");
    });

    test("GET /v1/models lists the plan's models; a demo-only account sees only demo", async () => {
      const { data: page, response } = await client.models.list().withResponse();
      assert.ok(response.headers.get("x-request-id"), "x-request-id on the model list");
      const models = page.data.map((m) => ({ id: m.id, object: m.object, owned_by: m.owned_by }));
      models.sort((a, b) => a.id.localeCompare(b.id));
      assert.deepEqual(models, [
        { id: "demo", object: "model", owned_by: "chat-gateway" },
        { id: TEST_MODEL, object: "model", owned_by: "acme" },
      ]);
      for (const m of page.data) assert.ok(Number.isInteger(m.created) && m.created > 1_600_000_000);

      const demoAccount = await gw.account("demo-only", { plan: "demo-only" });
      const demoKey = await newKey(demoAccount);
      const demoClient = sdk(demoKey.secret);
      const demoList = await demoClient.models.list();
      assert.deepEqual(
        demoList.data.map((m) => m.id),
        ["demo"],
      );
      // ... and may use demo, but not a model outside its plan.
      const ok = await demoClient.chat.completions.create({
        model: "demo",
        messages: [{ role: "user", content: "hi" }],
      });
      assert.equal(ok.model, "demo");
      assert.match(ok.choices[0]!.message.content ?? "", /demo model/);
      const err = await refused(
        demoClient.chat.completions.create({
          model: TEST_MODEL,
          messages: [{ role: "user", content: "hi" }],
        }),
      );
      await assertRefusedChat(err, {
        cls: NotFoundError,
        status: 404,
        code: "model_not_found",
        type: "invalid_request_error",
      });
    });

    test("forwarded request: parameters pass through, upstream key replaces the client's", async () => {
      upstream.reset();
      const res = await client.chat.completions.create({
        model: TEST_MODEL,
        messages: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "Forward my params mock:tokens=3" },
        ],
        temperature: 0.3,
        top_p: 0.9,
        max_tokens: 50,
        stop: ["END", "STOP"],
        seed: 42,
        user: "user-1234",
        n: 2,
        tools: [weatherTool],
        tool_choice: "auto",
        parallel_tool_calls: false,
        presence_penalty: 0.5,
        frequency_penalty: 0.25,
        logit_bias: { "50256": -100 },
        response_format: { type: "text" },
        metadata: { app: "e2e" },
      });
      assert.equal(res.choices.length, 2);
      assert.equal(res.usage?.completion_tokens, 6, "3 tokens for each of 2 choices");
      assert.equal(upstream.requests.length, 1, "one upstream call");
      const got = upstream.requests[0]!;
      assert.equal(got.path, "/v1/chat/completions");
      assert.equal(got.headers.authorization, `Bearer ${UPSTREAM_KEY}`);
      const headerText = JSON.stringify(got.headers);
      const bodyText = JSON.stringify(got.body);
      for (const s of secrets.filter((s) => s !== UPSTREAM_KEY)) {
        assert.ok(!headerText.includes(s), "no client key in the upstream's headers");
        assert.ok(!bodyText.includes(s), "no client key in the upstream's body");
      }
      const body = got.body as Record<string, unknown>;
      assert.equal(body.model, "mock-model", "the upstream's model name");
      assert.deepEqual(body.messages, [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Forward my params mock:tokens=3" },
      ]);
      assert.deepEqual(
        {
          temperature: body.temperature,
          top_p: body.top_p,
          max_tokens: body.max_tokens,
          stop: body.stop,
          seed: body.seed,
          user: body.user,
          n: body.n,
          tools: body.tools,
          tool_choice: body.tool_choice,
          parallel_tool_calls: body.parallel_tool_calls,
          presence_penalty: body.presence_penalty,
          frequency_penalty: body.frequency_penalty,
          logit_bias: body.logit_bias,
          response_format: body.response_format,
          metadata: body.metadata,
        },
        {
          temperature: 0.3,
          top_p: 0.9,
          max_tokens: 50,
          stop: ["END", "STOP"],
          seed: 42,
          user: "user-1234",
          n: 2,
          tools: [weatherTool],
          tool_choice: "auto",
          parallel_tool_calls: false,
          presence_penalty: 0.5,
          frequency_penalty: 0.25,
          logit_bias: { "50256": -100 },
          response_format: { type: "text" },
          metadata: { app: "e2e" },
        },
      );
      assert.notEqual(body.stream, true, "a non-streaming call is not streamed upstream");
    });

    test("missing key: AuthenticationError 401 missing_api_key (SDK and fetch)", async () => {
      let sent: Headers | undefined;
      const anonymous = sdk("sk-not-sent", {
        defaultHeaders: { Authorization: null },
        fetch: (input, init) => {
          sent = new Headers(init?.headers);
          return fetch(input, init);
        },
      });
      const err = await refused(
        anonymous.chat.completions.create({ model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] }),
      );
      assert.ok(sent, "the SDK sent a request");
      assert.equal(sent.get("authorization"), null, "no Authorization header was sent");
      const row = await assertRefusedChat(err, {
        cls: AuthenticationError,
        status: 401,
        code: "missing_api_key",
        type: "authentication_error",
      });
      assert.equal(row.account_id, null);

      const res = await fetch(`${gw.baseURL}/models`, { signal: AbortSignal.timeout(10_000) });
      assert.equal(res.status, 401);
      assert.ok(res.headers.get("x-request-id"));
      const body = (await res.json()) as { error: { code: string } };
      assert.equal(body.error.code, "missing_api_key");
    });

    test("unknown key: AuthenticationError 401 invalid_api_key", async () => {
      const unknown = `sk-${"Zq9".repeat(14)}x`;
      secrets.push(unknown);
      const err = await refused(
        sdk(unknown).chat.completions.create({
          model: TEST_MODEL,
          messages: [{ role: "user", content: "hi" }],
        }),
      );
      await assertRefusedChat(err, {
        cls: AuthenticationError,
        status: 401,
        code: "invalid_api_key",
        type: "authentication_error",
      });
      assert.ok(!err.message.includes(unknown), "the error does not echo the key");
    });

    test("disabled key: PermissionDeniedError 403 key_disabled, within the cache's poll", async () => {
      const k = await newKey(accountId);
      const c = sdk(k.secret);
      await c.models.list(); // cached as valid
      await updateKey(gw.gateway.deps.store.db, k.id, { disabled: true });
      await eventually("refused", () =>
        c.models.list().then(
          () => undefined,
          (e: unknown) => e,
        ),
      );
      const err = await refused(
        c.chat.completions.create({ model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] }),
      );
      const row = await assertRefusedChat(err, {
        cls: PermissionDeniedError,
        status: 403,
        code: "key_disabled",
        type: "permission_error",
      });
      assert.equal(row.key_id, k.id);
      assert.equal(row.account_id, accountId);
      // the first key of the account is untouched
      await client.models.list();
    });

    test("disabled account: PermissionDeniedError 403 account_disabled", async () => {
      const acc = await gw.account("to-disable");
      const k = await newKey(acc);
      const c = sdk(k.secret);
      const ok = await c.chat.completions.create({
        model: TEST_MODEL,
        messages: [{ role: "user", content: "hi" }],
      });
      assert.equal(ok.object, "chat.completion");
      await updateAccount(gw.gateway.deps.store.db, acc, { disabled: true });
      await eventually("refused", () =>
        c.models.list().then(
          () => undefined,
          (e: unknown) => e,
        ),
      );
      const err = await refused(
        c.chat.completions.create({ model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] }),
      );
      const row = await assertRefusedChat(err, {
        cls: PermissionDeniedError,
        status: 403,
        code: "account_disabled",
        type: "permission_error",
      });
      assert.equal(row.account_id, acc);
    });

    test("key over its limit: RateLimitError 429 key_limit_exceeded", async () => {
      // A limit too small for any request.
      const small = await newKey(accountId, { limit: 5 });
      const err = await refused(
        sdk(small.secret).chat.completions.create({
          model: TEST_MODEL,
          messages: [{ role: "user", content: "hi" }],
        }),
      );
      await assertRefusedChat(err, {
        cls: RateLimitError,
        status: 429,
        code: "key_limit_exceeded",
        type: "insufficient_quota",
      });

      // A key whose consumption already reached its (lowered) limit is refused at the door.
      const spent = await newKey(accountId);
      const c = sdk(spent.secret);
      const first = await c.chat.completions.create({
        model: TEST_MODEL,
        messages: [{ role: "user", content: "spend mock:tokens=8" }],
      });
      const used = first.usage!.total_tokens;
      await updateKey(gw.gateway.deps.store.db, spent.id, { limit_tokens: used });
      const err2 = await eventually("refused", () =>
        c.models.list().then(
          () => undefined,
          (e: unknown) => e,
        ),
      );
      assert.ok(err2 instanceof RateLimitError);
      const err3 = await refused(
        c.chat.completions.create({ model: TEST_MODEL, messages: [{ role: "user", content: "again" }] }),
      );
      await assertRefusedChat(err3, {
        cls: RateLimitError,
        status: 429,
        code: "key_limit_exceeded",
        type: "insufficient_quota",
      });
    });

    test("refusals that a retry cannot fix say x-should-retry: false, and the SDK does not retry them", async () => {
      const account = await gw.account("no-retry");
      const key = await newKey(account, { limit: 5 });
      const res = await fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
        body: JSON.stringify({ model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] }),
      });
      assert.equal(res.status, 429);
      assert.equal(res.headers.get("x-should-retry"), "false");
      await res.arrayBuffer();
      const err = await sdk(key.secret, { maxRetries: 3 })
        .chat.completions.create({ model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] })
        .catch((e: unknown) => e);
      assert.ok(err instanceof RateLimitError);
      assert.equal((await gw.recorded("key_id", key.id)).calls, 2, "one call each, no retries");
    });

    test("account out of quota: RateLimitError 429 insufficient_quota", async () => {
      const acc = await gw.account("poor", { quota: 5 });
      const k = await newKey(acc);
      const err = await refused(
        sdk(k.secret).chat.completions.create({
          model: TEST_MODEL,
          messages: [{ role: "user", content: "hi" }],
        }),
      );
      const row = await assertRefusedChat(err, {
        cls: RateLimitError,
        status: 429,
        code: "insufficient_quota",
        type: "insufficient_quota",
      });
      assert.equal(Number(row.total_tokens), 0, "nothing charged for a refused call");
    });

    test("unknown model: NotFoundError 404 model_not_found naming the param", async () => {
      upstream.reset();
      const err = await refused(
        client.chat.completions.create({
          model: "no-such-model",
          messages: [{ role: "user", content: "hi" }],
        }),
      );
      await assertRefusedChat(err, {
        cls: NotFoundError,
        status: 404,
        code: "model_not_found",
        type: "invalid_request_error",
      });
      assert.equal(err.param, "model");
      assert.equal(upstream.requests.length, 0, "nothing forwarded");
    });

    test("upstream 500: InternalServerError 502 upstream_error without upstream secrets or hosts", async () => {
      for (const stream of [false, true]) {
        const err = await refused(
          client.chat.completions.create({
            model: TEST_MODEL,
            messages: [{ role: "user", content: "fail mock:status=500" }],
            stream,
          }),
        );
        const row = await assertRefusedChat(err, {
          cls: InternalServerError,
          status: 502,
          code: "upstream_error",
          type: "upstream_error",
        });
        assert.equal(Number(row.stream), stream ? 1 : 0);
        const raw = JSON.stringify(err.error);
        for (const text of [err.message, raw]) {
          assert.ok(!text.includes(UPSTREAM_KEY), `no upstream key in ${text}`);
          assert.ok(!text.includes(UPSTREAM_INTERNAL_HOST), `no upstream host in ${text}`);
        }
      }
    });

    test("an upstream's context_length_exceeded reaches the SDK with its code, param and message", async () => {
      const err = await client.chat.completions
        .create({
          model: TEST_MODEL,
          messages: [{ role: "user", content: "long mock:context-overflow" }],
        })
        .catch((e: unknown) => e);
      assert.ok(err instanceof BadRequestError, String(err));
      assert.equal(err.code, "context_length_exceeded");
      assert.equal(err.param, "messages");
      assert.match(err.message, /maximum context length/);
      assert.equal((err.error as { type: string }).type, "invalid_request_error");
    });

    test("no log line carries a key", () => {
      assert.ok(gw.logs.length > 10, "the gateway's logs were captured");
      assert.ok(
        gw.logs.some((l) => l.includes(`"key":"${key.id}"`)),
        "request lines name the key by id (so the capture covers the requests above)",
      );
      const access = gw.logs
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((e) => e.key === key.id);
      assert.match(
        String(access?.request_id),
        /^req_[0-9a-z]{9}[0-9A-Za-z]{11}$/,
        "an access line names its request",
      );
      for (const line of gw.logs) {
        for (const s of secrets) assert.ok(!line.includes(s), `a log line contains a secret: ${line}`);
        assert.doesNotMatch(line, /sk-[A-Za-z0-9_-]{12,}/, `a log line contains something key-like: ${line}`);
      }
    });
  });
}
