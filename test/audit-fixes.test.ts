// Defects an outside audit and a sweep of client libraries found (issue #17), each pinned by
// a test that failed before its fix: request-path work linear in the input, bounded model
// names that count against the rate limits, and what the gateway tells real clients.
import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";
import OpenAI, { BadRequestError, NotFoundError, RateLimitError } from "openai";
import { parseChatRequest } from "../src/domain/chat-request.ts";
import { DEFAULT_PROMPT_OVERHEADS, promptUpperBound } from "../src/providers/prompt-bound.ts";
import { startTestGateway, TEST_MODEL, type TestGateway, testConfig } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { parseStream, until } from "./support/stream-assertions.ts";

const plans = [
  { id: "default", quota_tokens: 1_000_000_000, models: [TEST_MODEL, "demo"] },
  {
    id: "limited",
    quota_tokens: 1_000_000_000,
    models: [TEST_MODEL, "demo"],
    rate_limits: { key: { rpm: 3 } },
  },
];

describe("audit fixes", () => {
  let upstream: MockUpstream;
  let gw: TestGateway;
  let secret: string;
  let accountId: string;

  before(async () => {
    upstream = await startMockUpstream();
    const base = testConfig(upstream);
    gw = await startTestGateway({
      upstream,
      config: {
        models: [
          ...base.models,
          // OpenAI's reasoning models take the bound only as max_completion_tokens
          {
            id: "reasoner",
            provider: "mock",
            upstream_model: "o3-mini",
            output_bound_field: "max_completion_tokens",
          },
          { id: "reasoner-unset", provider: "mock", upstream_model: "o3-mini" },
          { id: "acme/chat-1", provider: "mock", upstream_model: "mock-model" },
        ],
        plans: plans.map((p) => ({
          ...p,
          models: [...p.models, "reasoner", "reasoner-unset", "acme/chat-1"],
        })),
        server: {
          host: "127.0.0.1",
          port: 0,
          body_limit_bytes: 4 * 1024 * 1024,
          shutdown_grace_ms: 5_000,
          sse_keepalive_ms: 150,
          stream_stall_ms: 500,
        },
      },
    });
    accountId = await gw.account("audit");
    secret = (await gw.key(accountId)).secret;
  });
  after(async () => {
    await gw.close();
    await upstream.close();
  });

  const post = (body: unknown, key = secret) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  describe("one request cannot stall the gateway", () => {
    for (const [name, model, content] of [
      ["a 1 MB single-word prompt to the demo model (counted locally)", "demo", "a".repeat(1_000_000)],
      [
        "a 1 MB run of CJK text to an upstream that reports no usage (estimated)",
        TEST_MODEL,
        `${"漢字".repeat(170_000)} mock:no-usage mock:tokens=3`,
      ],
    ] as const) {
      it(name, async () => {
        // Other clients keep being served while it runs: the longest wait between two
        // health checks stays far below what a quadratic count takes (minutes to hours).
        let longestGapMs = 0;
        let last = performance.now();
        let running = true;
        const probes = (async () => {
          while (running) {
            const res = await fetch(`${gw.origin}/healthz`);
            await res.arrayBuffer();
            const now = performance.now();
            longestGapMs = Math.max(longestGapMs, now - last);
            last = now;
            await new Promise((r) => setTimeout(r, 20));
          }
        })();
        const res = await post({ model, messages: [{ role: "user", content }] });
        const body = (await res.json()) as { usage: { prompt_tokens: number } };
        running = false;
        await probes;
        assert.equal(res.status, 200);
        assert.ok(body.usage.prompt_tokens > 100_000, "the long prompt was counted, not skipped");
        assert.ok(longestGapMs < 3_000, `health checks waited ${Math.round(longestGapMs)} ms at most`);
      });
    }
  });

  describe("model names", () => {
    it("a huge model name is refused with 400 naming `model`, and not echoed", async () => {
      const res = await post({ model: "m".repeat(900_000), messages: [{ role: "user", content: "hi" }] });
      const text = await res.text();
      assert.equal(res.status, 400);
      const { error } = JSON.parse(text);
      assert.equal(error.param, "model");
      assert.equal(error.code, "invalid_request");
      assert.ok(text.length < 1_000, "the answer does not carry the name");
      const rec = await gw.record(res.headers.get("x-request-id")!);
      assert.equal(rec.public_model, null, "the record does not store it either");
    });

    it("names outside the id format are refused the same way", async () => {
      for (const model of ["gpt 4o", "../etc", "m\u0000x", "模型"]) {
        const res = await post({ model, messages: [{ role: "user", content: "hi" }] });
        assert.equal(res.status, 400, model);
        assert.equal(((await res.json()) as { error: { param: string } }).error.param, "model");
      }
    });

    it("unknown models are recorded, but share one daily aggregate row", async () => {
      const account = await gw.account("unknown-models");
      const key = await gw.key(account);
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const res = await post(
          { model: `no-such-model-${i}`, messages: [{ role: "user", content: "hi" }] },
          key.secret,
        );
        assert.equal(res.status, 404);
        ids.push(res.headers.get("x-request-id")!);
      }
      assert.equal((await gw.record(ids[7]!)).public_model, "no-such-model-7");
      const db = gw.gateway.deps.store.db;
      await gw.gateway.deps.records.flush();
      const rows = await db.selectFrom("daily_usage").selectAll().where("account_id", "=", account).execute();
      assert.equal(rows.length, 1, "one row for every unknown model together");
      assert.equal(rows[0]!.model, "");
      assert.equal(Number(rows[0]!.calls), 20);
    });

    it("refused calls count against the key's requests per minute", async () => {
      const account = await gw.account("limited", { plan: "limited" });
      const key = await gw.key(account);
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await post(
          { model: "no-such-model", messages: [{ role: "user", content: "hi" }] },
          key.secret,
        );
        await res.arrayBuffer();
        statuses.push(res.status);
      }
      assert.deepEqual(statuses, [404, 404, 404, 429, 429]);
      const bad = await post({ model: "x".repeat(500), messages: [] }, key.secret);
      assert.equal(bad.status, 429, "malformed calls are limited before they are looked at");
    });
  });

  describe("what real clients get", () => {
    const sdk = (maxRetries = 0, key = secret) =>
      new OpenAI({ baseURL: gw.baseURL, apiKey: key, maxRetries });

    it("an upstream's context_length_exceeded reaches the SDK with its code, param and message", async () => {
      const err = await sdk()
        .chat.completions.create({
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

    it("GET /v1/models/{model} serves the plan's models, ids with a slash included; 404 otherwise", async () => {
      const model = await sdk().models.retrieve(TEST_MODEL);
      assert.deepEqual(Object.keys(model).sort(), ["created", "id", "object", "owned_by"]);
      assert.equal(model.id, TEST_MODEL);
      assert.equal((await sdk().models.retrieve("acme/chat-1")).id, "acme/chat-1");
      const raw = await fetch(`${gw.baseURL}/models/acme/chat-1`, {
        headers: { authorization: `Bearer ${secret}` },
      });
      assert.equal(((await raw.json()) as { id: string }).id, "acme/chat-1", "unencoded too");
      const missing = await sdk()
        .models.retrieve("no-such-model")
        .catch((e: unknown) => e);
      assert.ok(missing instanceof NotFoundError);
      assert.equal((missing.error as { code: string }).code, "model_not_found");
    });

    it("a reasoning model gets the bound as max_completion_tokens where configured; unset, its refusal comes through", async () => {
      upstream.reset();
      const ok = await sdk().chat.completions.create({
        model: "reasoner",
        messages: [{ role: "user", content: "think mock:tokens=3" }],
      });
      assert.equal(ok.choices[0]!.finish_reason, "stop");
      const sent = upstream.requests.at(-1)!.body;
      assert.equal(sent.max_tokens, undefined);
      assert.equal(
        typeof sent.max_completion_tokens,
        "number",
        "the reserved bound, in the field it accepts",
      );
      const refused = await sdk()
        .chat.completions.create({ model: "reasoner-unset", messages: [{ role: "user", content: "think" }] })
        .catch((e: unknown) => e);
      assert.ok(refused instanceof BadRequestError);
      assert.equal(refused.code, "unsupported_parameter");
      assert.equal(refused.param, "max_tokens");
    });

    it("refusals that a retry cannot fix say x-should-retry: false, and the SDK does not retry them", async () => {
      const account = await gw.account("no-retry");
      const key = await gw.key(account, { limit: 5 });
      const res = await post({ model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] }, key.secret);
      assert.equal(res.status, 429);
      assert.equal(res.headers.get("x-should-retry"), "false");
      await res.arrayBuffer();
      const err = await sdk(3, key.secret)
        .chat.completions.create({ model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] })
        .catch((e: unknown) => e);
      assert.ok(err instanceof RateLimitError);
      assert.equal((await gw.recorded("key_id", key.id)).calls, 2, "one call each, no retries");
    });

    it("a client disconnect is never charged more than was reserved, whatever the local estimate says", async () => {
      upstream.reset();
      const account = await gw.account("disconnect-cap");
      const key = await gw.key(account);
      // each streamed word is 2,000 characters: the local count of what was delivered is far
      // more than the 10 tokens the upstream may produce
      const messages = [
        { role: "user" as const, content: `mock:text=${"x".repeat(2_000)} mock:hang-after=5` },
      ];
      const controller = new AbortController();
      const res = await fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
        body: JSON.stringify({ model: TEST_MODEL, stream: true, max_tokens: 10, messages }),
        signal: controller.signal,
      });
      const reader = res.body!.getReader();
      let seen = "";
      while ((seen.match(/"content"/g) ?? []).length < 5)
        seen += new TextDecoder().decode((await reader.read()).value);
      controller.abort();
      await until(() => gw.gateway.deps.ledger.openReservations() === 0, "the reservation is closed");
      await gw.gateway.deps.records.flush();
      const row = await gw.record(res.headers.get("x-request-id")!);
      assert.equal(row.status, "client_disconnect");
      const reserved =
        promptUpperBound(parseChatRequest({ model: TEST_MODEL, messages }), DEFAULT_PROMPT_OVERHEADS) + 10;
      assert.ok(row.total_tokens <= reserved, `charged ${row.total_tokens}, reserved ${reserved}`);
      assert.ok(row.completion_tokens > 0, "what was delivered is still charged");
    });

    it("a stream waiting for its first token sends keep-alive comments, and still ends with [DONE]", async () => {
      const res = await post({
        model: TEST_MODEL,
        stream: true,
        messages: [{ role: "user", content: "slow mock:latency=600 mock:tokens=3" }],
      });
      const text = await res.text();
      assert.equal(res.status, 200);
      const firstData = text.indexOf("data:");
      assert.ok(
        text.indexOf(": keep-alive") !== -1 && text.indexOf(": keep-alive") < firstData,
        text.slice(0, 200),
      );
      const s = parseStream(text);
      assert.equal(s.contents.length, 3);
      assert.ok(s.done);
      // and the SDK reads such a stream as usual
      const chunks: string[] = [];
      const stream = await sdk().chat.completions.create({
        model: TEST_MODEL,
        stream: true,
        messages: [{ role: "user", content: "slow mock:latency=400 mock:tokens=2" }],
      });
      for await (const chunk of stream) chunks.push(chunk.choices[0]?.delta?.content ?? "");
      assert.equal(chunks.join("").trim().split(/\s+/).length, 2);
    });

    it("a stream client that stops reading is cut off: the upstream is stopped, the call ends charged what was delivered", async () => {
      // an upstream that streams for minutes, a chunk at a time
      const slow = await startMockUpstream({ chunkDelayMs: 1 });
      const own = await startTestGateway({
        upstream: slow,
        config: {
          server: {
            host: "127.0.0.1",
            port: 0,
            body_limit_bytes: 65_536,
            shutdown_grace_ms: 5_000,
            stream_stall_ms: 500,
          },
        },
      });
      try {
        const account = await own.account("stalled");
        const key = await own.key(account);
        const body = JSON.stringify({
          model: TEST_MODEL,
          stream: true,
          max_tokens: 200_000,
          messages: [{ role: "user", content: `mock:text=${"y".repeat(4_000)} mock:tokens=100000` }],
        });
        const url = new URL(own.origin);
        const socket = connect(Number(url.port), url.hostname);
        socket.on("error", () => undefined);
        socket.write(
          `POST /v1/chat/completions HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${key.secret}\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
        socket.pause(); // and reads nothing from now on
        await until(() => slow.requests.length === 1, "the call reaches the upstream");
        // the gateway gives up on the client while it still reads nothing
        await until(() => own.gateway.deps.ledger.openReservations() === 0, "the call ends", 30_000);
        await until(() => slow.aborted() === 1, "the upstream call is stopped");
        socket.destroy();
        await own.gateway.deps.records.flush();
        const rows = await own.gateway.deps.store.db
          .selectFrom("call_records")
          .selectAll()
          .where("account_id", "=", account)
          .execute();
        assert.equal(rows.length, 1);
        assert.equal(rows[0]!.status, "client_disconnect");
        assert.ok(rows[0]!.completion_tokens > 0, "what was delivered is charged");
        // the whole answer would be about 10^8 tokens; what was delivered is charged, capped
        // at the reservation (the words are long, so the local estimate runs high)
        const reserved =
          promptUpperBound(parseChatRequest(JSON.parse(body)), DEFAULT_PROMPT_OVERHEADS) + 200_000;
        assert.ok(
          rows[0]!.total_tokens <= reserved,
          `${rows[0]!.total_tokens} charged, ${reserved} reserved`,
        );
      } finally {
        await own.close();
        await slow.close();
      }
    });
  });
});
