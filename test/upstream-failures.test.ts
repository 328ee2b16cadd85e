// Issue (Exact accounting): upstream failures. Before the first byte the client gets the
// envelope: 502 (upstream error, message sanitised) or 504 (a timeout); after the first byte
// of a stream an SSE error event and no [DONE], the record says upstream_error and the
// delivered tokens are charged. Every timeout of a provider (connect, first byte, idle, total)
// is provoked for real. Streaming usage: the gateway always asks the upstream for usage,
// passes it through only when the client asked, and estimates it when the upstream gives none.
// Run on SQLite and on PostgreSQL.
import assert from "node:assert/strict";
import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import { Worker } from "node:worker_threads";
import type { ConfigInput } from "../src/config/schema.ts";
import { countPromptTokens } from "../src/tokens/count.ts";
import { startTestGateway, TEST_MODEL, type TestGateway, testConfig } from "./support/gateway.ts";
import { freePort } from "./support/listen.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { storeSuite } from "./support/postgres.ts";
import { mockPromptTokens, parseStream, type Stream, until } from "./support/stream-assertions.ts";

/** same upstream as TEST_MODEL, with short first-byte and idle timeouts */
const STRICT_MODEL = "gpt-strict";
/** a slow-streaming upstream (40 ms between chunks) with a short total timeout */
const TOTAL_MODEL = "gpt-total";
/** a provider whose port has no listener */
const REFUSED_MODEL = "gpt-refused";
/** a provider whose listener never accepts and whose accept queue is full */
const CONNECT_MODEL = "gpt-connect";

const UPSTREAM_SECRET = "sk-upstream-secret-123";

type Message = { role: "system" | "user" | "assistant"; content: string };

interface Reply {
  status: number;
  requestId: string;
  retryAfter: string | null;
  contentType: string;
  text: string;
}

async function post(gw: TestGateway, secret: string, body: Record<string, unknown>): Promise<Reply> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    requestId: res.headers.get("x-request-id") ?? "",
    retryAfter: res.headers.get("retry-after"),
    contentType: res.headers.get("content-type") ?? "",
    text,
  };
}

/** The `data:` payloads of an SSE body, each framed as `data: …\n\n`. */
/** A 200 SSE answer, read as the client got it. */
function parseReply(reply: Reply): Stream {
  assert.equal(reply.status, 200);
  assert.match(reply.contentType, /^text\/event-stream/);
  return parseStream(reply.text);
}

/**
 * A TCP listener that never accepts, with its accept queue filled: a new connection's SYN is
 * dropped by the kernel, so connecting hangs until the client's connect timeout. The listener
 * lives in a worker thread whose event loop is blocked, so libuv never calls accept().
 */
async function startUnacceptingListener(): Promise<{ port: number; close(): Promise<void> }> {
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(
    `const { workerData, parentPort } = require("node:worker_threads");
     const server = require("node:net").createServer();
     server.listen({ host: "127.0.0.1", port: 0, backlog: 1 }, () => {
       parentPort.postMessage(server.address().port);
       Atomics.wait(workerData, 0, 0); // blocks the loop: nothing is ever accepted
       server.close();
       process.exit(0);
     });`,
    { eval: true, workerData: flag },
  );
  const [port] = (await once(worker, "message")) as [number];
  const fillers: Socket[] = [];
  let full = false;
  for (let i = 0; i < 32 && !full; i++) {
    const socket = connect(port, "127.0.0.1");
    socket.on("error", () => undefined);
    fillers.push(socket);
    let timer: NodeJS.Timeout | undefined;
    const connected = await Promise.race([
      once(socket, "connect").then(() => true),
      new Promise<boolean>((r) => {
        timer = setTimeout(() => r(false), 500);
      }),
    ]);
    clearTimeout(timer);
    full = !connected;
  }
  assert.ok(full, "the listener's accept queue fills up");
  return {
    port,
    async close() {
      for (const s of fillers) s.destroy();
      const exited = once(worker, "exit");
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0);
      await exited;
    },
  };
}

for (const store of ["sqlite", "postgres"] as const) {
  describe(`upstream failures (${store})`, await storeSuite(store), () => {
    let upstream: MockUpstream;
    let slow: MockUpstream;
    let unaccepting: Awaited<ReturnType<typeof startUnacceptingListener>>;
    let gw: TestGateway;
    let n = 0;

    before(async () => {
      upstream = await startMockUpstream();
      slow = await startMockUpstream({ chunkDelayMs: 40 });
      unaccepting = await startUnacceptingListener();
      const refusedPort = await freePort();
      const base = testConfig(upstream);
      const models = [STRICT_MODEL, TOTAL_MODEL, REFUSED_MODEL, CONNECT_MODEL];
      const config: Partial<ConfigInput> = {
        providers: [
          ...base.providers,
          {
            id: "mock-strict",
            type: "openai-compatible",
            base_url: upstream.url,
            api_key_env: "MOCK_UPSTREAM_KEY",
            timeouts: { connect_ms: 500, first_byte_ms: 300, idle_ms: 300, total_ms: 10_000 },
          },
          {
            id: "mock-slow",
            type: "openai-compatible",
            base_url: slow.url,
            api_key_env: "MOCK_UPSTREAM_KEY",
            timeouts: { connect_ms: 2_000, first_byte_ms: 5_000, idle_ms: 5_000, total_ms: 1_000 },
          },
          {
            id: "refused",
            type: "openai-compatible",
            base_url: `http://127.0.0.1:${refusedPort}/v1`,
            api_key_env: "MOCK_UPSTREAM_KEY",
            timeouts: { connect_ms: 2_000, first_byte_ms: 3_000, idle_ms: 3_000, total_ms: 10_000 },
          },
          {
            id: "unaccepting",
            type: "openai-compatible",
            base_url: `http://127.0.0.1:${unaccepting.port}/v1`,
            api_key_env: "MOCK_UPSTREAM_KEY",
            timeouts: { connect_ms: 300, first_byte_ms: 5_000, idle_ms: 5_000, total_ms: 10_000 },
          },
        ],
        models: [
          ...base.models,
          { id: STRICT_MODEL, provider: "mock-strict", upstream_model: "mock-model", max_output_tokens: 256 },
          { id: TOTAL_MODEL, provider: "mock-slow", upstream_model: "mock-model", max_output_tokens: 256 },
          { id: REFUSED_MODEL, provider: "refused", upstream_model: "mock-model", max_output_tokens: 256 },
          {
            id: CONNECT_MODEL,
            provider: "unaccepting",
            upstream_model: "mock-model",
            max_output_tokens: 256,
          },
        ],
        plans: [{ id: "default", quota_tokens: 1_000_000_000, models: [TEST_MODEL, ...models] }],
      };
      gw = await startTestGateway({ upstream, store, config });
    });

    after(async () => {
      await gw?.close();
      await upstream?.close();
      await slow?.close();
      await unaccepting?.close();
    });

    /** A fresh account and key, so each case's books are its own. */
    async function freshKey(): Promise<{ secret: string; keyId: string; accountId: string }> {
      const accountId = await gw.account(`upstream-failures-${store}-${++n}`);
      const { id, secret } = await gw.key(accountId);
      return { secret, keyId: id, accountId };
    }

    /**
     * The books of a key after its calls: no reservation open, the ledger's counters equal the
     * stored ones, and the stored counter is the sum of the key's records. Returns what it used.
     */
    async function assertBooks(keyId: string, accountId: string): Promise<number> {
      const { ledger, store: st } = gw.gateway.deps;
      await until(() => ledger.openReservations() === 0, "every reservation is closed");
      const key = await st.db
        .selectFrom("api_keys")
        .select("used_tokens")
        .where("id", "=", keyId)
        .executeTakeFirstOrThrow();
      const account = await st.db
        .selectFrom("accounts")
        .select("used_tokens")
        .where("id", "=", accountId)
        .executeTakeFirstOrThrow();
      const sum = await st.db
        .selectFrom("call_records")
        .select((eb) => eb.fn.sum<number>("total_tokens").as("t"))
        .where("key_id", "=", keyId)
        .executeTakeFirstOrThrow();
      assert.equal(Number(sum.t ?? 0), key.used_tokens, "the key's records add up to its stored counter");
      assert.equal(account.used_tokens, key.used_tokens, "the account's only key carries its consumption");
      assert.deepEqual(
        await gw.ledger("key", keyId),
        { used: key.used_tokens, reserved: 0 },
        "ledger (key) = store",
      );
      assert.deepEqual(
        await gw.ledger("account", accountId),
        { used: account.used_tokens, reserved: 0 },
        "ledger (account)",
      );
      return key.used_tokens;
    }

    function assertEnvelope(reply: Reply, status: number, code: string, type: string): any {
      assert.equal(reply.status, status, reply.text);
      assert.match(reply.contentType, /^application\/json/);
      const body = JSON.parse(reply.text);
      assert.equal(body.error.code, code);
      assert.equal(body.error.type, type);
      assert.equal(typeof body.error.message, "string");
      return body;
    }

    async function assertNothingCharged(
      reply: Reply,
      keyId: string,
      accountId: string,
      http: number,
      code: string,
    ) {
      const row = await gw.record(reply.requestId);
      assert.equal(row.status, "error");
      assert.equal(row.http_status, http);
      assert.equal(row.error_code, code);
      assert.equal(row.prompt_tokens, 0);
      assert.equal(row.completion_tokens, 0);
      assert.equal(row.total_tokens, 0);
      assert.equal(row.usage_source, "none");
      assert.equal(await assertBooks(keyId, accountId), 0, "nothing is charged");
    }

    // -- upstream error statuses, before the first byte ------------------------------------

    for (const stream of [false, true]) {
      const mode = stream ? "stream" : "non-stream";
      it(`upstream 500 → 502 upstream_error, message sanitised, nothing charged (${mode})`, async () => {
        const { secret, keyId, accountId } = await freshKey();
        const reply = await post(gw, secret, {
          model: TEST_MODEL,
          stream,
          messages: [{ role: "user", content: "hello mock:status=500" }],
        });
        const body = assertEnvelope(reply, 502, "upstream_error", "upstream_error");
        const message: string = body.error.message;
        assert.ok(!message.includes(UPSTREAM_SECRET), `no upstream key in: ${message}`);
        assert.ok(!message.includes("10.0.0.5"), `no upstream address in: ${message}`);
        assert.ok(!message.includes("http://"), `no URL in: ${message}`);
        assert.ok(!reply.text.includes(UPSTREAM_SECRET) && !reply.text.includes("10.0.0.5"));
        await assertNothingCharged(reply, keyId, accountId, 502, "upstream_error");
      });

      it(`upstream 429 → 429 upstream_rate_limited with retry-after, nothing charged (${mode})`, async () => {
        const { secret, keyId, accountId } = await freshKey();
        const reply = await post(gw, secret, {
          model: TEST_MODEL,
          stream,
          messages: [{ role: "user", content: "hello mock:status=429 mock:retry-after=0" }],
        });
        assertEnvelope(reply, 429, "upstream_rate_limited", "upstream_error");
        assert.equal(reply.retryAfter, "1", "its one deployment is free again at once: the least wait");
        await assertNothingCharged(reply, keyId, accountId, 429, "upstream_rate_limited");
      });

      it(`upstream 400 → 400 upstream_bad_request, nothing charged (${mode})`, async () => {
        const { secret, keyId, accountId } = await freshKey();
        const reply = await post(gw, secret, {
          model: TEST_MODEL,
          stream,
          messages: [{ role: "user", content: "hello mock:status=400" }],
        });
        assertEnvelope(reply, 400, "upstream_bad_request", "invalid_request_error");
        await assertNothingCharged(reply, keyId, accountId, 400, "upstream_bad_request");
      });

      // -- timeouts before the first byte ---------------------------------------------------

      it(`first-byte timeout → 504 upstream_timeout, upstream call aborted, nothing charged (${mode})`, async () => {
        upstream.reset();
        const { secret, keyId, accountId } = await freshKey();
        const reply = await post(gw, secret, {
          model: STRICT_MODEL,
          stream,
          messages: [{ role: "user", content: "hello mock:hang" }],
        });
        const body = assertEnvelope(reply, 504, "upstream_timeout", "upstream_error");
        assert.match(body.error.message, /start answering/, "the first-byte timeout fired");
        await until(() => upstream.aborted() === 1, "the gateway closes the upstream request");
        assert.equal(upstream.inFlight(), 0);
        await assertNothingCharged(reply, keyId, accountId, 504, "upstream_timeout");
      });

      it(`connect timeout (accept queue full) → 504 upstream_timeout, nothing charged (${mode})`, async () => {
        const { secret, keyId, accountId } = await freshKey();
        const reply = await post(gw, secret, {
          model: CONNECT_MODEL,
          stream,
          messages: [{ role: "user", content: "hello" }],
        });
        const body = assertEnvelope(reply, 504, "upstream_timeout", "upstream_error");
        assert.match(body.error.message, /connecting/, "the connect timeout fired");
        assert.ok(!body.error.message.includes("127.0.0.1"), "no upstream address");
        await assertNothingCharged(reply, keyId, accountId, 504, "upstream_timeout");
      });

      it(`connection refused → 502 upstream_error, nothing charged (${mode})`, async () => {
        const { secret, keyId, accountId } = await freshKey();
        const reply = await post(gw, secret, {
          model: REFUSED_MODEL,
          stream,
          messages: [{ role: "user", content: "hello" }],
        });
        const body = assertEnvelope(reply, 502, "upstream_error", "upstream_error");
        assert.ok(!body.error.message.includes("127.0.0.1"), `no upstream address in: ${body.error.message}`);
        assert.ok(!body.error.message.includes("http://"));
        await assertNothingCharged(reply, keyId, accountId, 502, "upstream_error");
      });
    }

    it("total timeout before the answer (mock:latency > total_ms, non-stream) → 504, nothing charged", async () => {
      slow.reset();
      const { secret, keyId, accountId } = await freshKey();
      const reply = await post(gw, secret, {
        model: TOTAL_MODEL,
        messages: [{ role: "user", content: "hello mock:latency=4000" }],
      });
      const body = assertEnvelope(reply, 504, "upstream_timeout", "upstream_error");
      assert.match(body.error.message, /total timeout/, "the total timeout fired");
      await until(() => slow.aborted() === 1, "the gateway closes the upstream request");
      await assertNothingCharged(reply, keyId, accountId, 504, "upstream_timeout");
    });

    it("upstream connection dropped before the answer (non-stream) → 502 upstream_error, nothing charged", async () => {
      const { secret, keyId, accountId } = await freshKey();
      const reply = await post(gw, secret, {
        model: TEST_MODEL,
        messages: [{ role: "user", content: "hello mock:drop-after=2" }],
      });
      assertEnvelope(reply, 502, "upstream_error", "upstream_error");
      await assertNothingCharged(reply, keyId, accountId, 502, "upstream_error");
    });

    // -- failures after the first byte of a stream -------------------------------------------

    /** The mid-stream shape: content, then one error event, no [DONE]; the record charges what was delivered. */
    async function assertMidStream(
      reply: Reply,
      messages: Message[],
      keyId: string,
      accountId: string,
      expected: { code: string; http: number; message: RegExp },
    ): Promise<Stream> {
      const s = parseReply(reply);
      assert.equal(s.done, false, "no [DONE] after an error");
      const last = s.events.at(-1);
      assert.equal(last.error?.code, expected.code, JSON.stringify(last));
      assert.equal(last.error.type, "upstream_error");
      assert.match(last.error.message, expected.message);
      assert.equal(s.events.filter((e) => e.error).length, 1, "one error event");
      assert.ok(!reply.text.includes(UPSTREAM_SECRET));
      const row = await gw.record(reply.requestId);
      assert.equal(row.status, "upstream_error");
      assert.equal(row.http_status, expected.http);
      assert.equal(row.error_code, expected.code);
      assert.equal(row.stream, 1);
      assert.equal(row.prompt_tokens, countPromptTokens(messages), "the prompt is charged (local count)");
      assert.equal(row.completion_tokens, s.contents.length, "the delivered tokens are charged");
      assert.equal(row.total_tokens, row.prompt_tokens + row.completion_tokens);
      assert.equal(row.usage_source, "estimated");
      assert.equal(await assertBooks(keyId, accountId), row.total_tokens);
      return s;
    }

    it("idle timeout mid-stream → 3 chunks, an upstream_timeout event, no [DONE], 3 tokens charged", async () => {
      upstream.reset();
      const { secret, keyId, accountId } = await freshKey();
      const messages: Message[] = [{ role: "user", content: "tell me mock:hang-after=3" }];
      const reply = await post(gw, secret, { model: STRICT_MODEL, stream: true, messages });
      const s = await assertMidStream(reply, messages, keyId, accountId, {
        code: "upstream_timeout",
        http: 504,
        message: /went silent/,
      });
      assert.deepEqual(s.contents, ["Hello", " world", " this"]);
      await until(() => upstream.aborted() === 1, "the gateway closes the stalled upstream request");
    });

    it("total timeout mid-stream → the chunks so far, an upstream_timeout event, no [DONE], delivered charged", async () => {
      slow.reset();
      const { secret, keyId, accountId } = await freshKey();
      const messages: Message[] = [{ role: "user", content: "a long one please mock:tokens=200" }];
      const reply = await post(gw, secret, { model: TOTAL_MODEL, stream: true, max_tokens: 200, messages });
      const s = await assertMidStream(reply, messages, keyId, accountId, {
        code: "upstream_timeout",
        http: 504,
        message: /total timeout/,
      });
      assert.ok(
        s.contents.length >= 1 && s.contents.length < 200,
        `${s.contents.length} chunks before the cut`,
      );
      await until(() => slow.aborted() === 1, "the gateway closes the upstream request");
    });

    it("upstream drop mid-stream → 4 chunks, an upstream_error event, no [DONE], 4 tokens charged", async () => {
      const { secret, keyId, accountId } = await freshKey();
      const messages: Message[] = [{ role: "user", content: "tell me mock:drop-after=4" }];
      const reply = await post(gw, secret, { model: TEST_MODEL, stream: true, messages });
      const s = await assertMidStream(reply, messages, keyId, accountId, {
        code: "upstream_error",
        http: 502,
        message: /./,
      });
      assert.equal(s.contents.length, 4);
    });

    // -- usage: estimated when the upstream gives none, passed through only when asked --------

    for (const includeUsage of [false, true]) {
      const asked = includeUsage ? "client asks for usage" : "client does not ask for usage";
      it(`stream without upstream usage (${asked}) → usage_source estimated, completion = delivered words`, async () => {
        upstream.reset();
        const { secret, keyId, accountId } = await freshKey();
        const messages: Message[] = [
          { role: "system", content: "be brief" },
          { role: "user", content: "seven words mock:tokens=7 mock:no-usage" },
        ];
        const reply = await post(gw, secret, {
          model: TEST_MODEL,
          stream: true,
          messages,
          ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
        });
        const s = parseReply(reply);
        assert.ok(s.done, "the stream ends with [DONE]");
        assert.equal(s.contents.length, 7);
        assert.equal(
          upstream.requests.at(-1)?.body.stream_options?.include_usage,
          true,
          "usage asked upstream",
        );
        const row = await gw.record(reply.requestId);
        assert.equal(row.status, "ok");
        assert.equal(row.http_status, 200);
        assert.equal(row.usage_source, "estimated");
        assert.equal(row.prompt_tokens, countPromptTokens(messages));
        assert.equal(row.completion_tokens, 7, "the delivered words, counted locally");
        assert.equal(row.total_tokens, row.prompt_tokens + 7);
        const usageChunks = s.events.filter((e) => Array.isArray(e.choices) && e.choices.length === 0);
        if (includeUsage) {
          assert.equal(usageChunks.length, 1, "one usage chunk");
          assert.equal(s.events.at(-1), usageChunks[0], "the usage chunk is the last before [DONE]");
          assert.deepEqual(usageChunks[0].usage, {
            prompt_tokens: row.prompt_tokens,
            completion_tokens: row.completion_tokens,
            total_tokens: row.total_tokens,
          });
        } else {
          assert.equal(usageChunks.length, 0, "no usage chunk the client did not ask for");
          assert.ok(
            s.events.every((e) => !("usage" in e)),
            "no usage key in any chunk",
          );
        }
        assert.equal(await assertBooks(keyId, accountId), row.total_tokens);
      });

      it(`stream with upstream usage (${asked}) → usage_source upstream, the mock's numbers`, async () => {
        upstream.reset();
        const { secret, keyId, accountId } = await freshKey();
        const messages: Message[] = [
          { role: "system", content: "be brief" },
          { role: "user", content: "seven words mock:tokens=7" },
        ];
        const reply = await post(gw, secret, {
          model: TEST_MODEL,
          stream: true,
          messages,
          ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
        });
        const s = parseReply(reply);
        assert.ok(s.done);
        assert.equal(s.contents.length, 7);
        assert.equal(upstream.requests.length, 1);
        assert.equal(
          upstream.requests[0]!.body.stream_options?.include_usage,
          true,
          "the gateway asks the upstream for usage even when the client did not",
        );
        const row = await gw.record(reply.requestId);
        assert.equal(row.status, "ok");
        assert.equal(row.usage_source, "upstream");
        assert.equal(row.prompt_tokens, mockPromptTokens(messages), "the upstream's prompt count");
        assert.equal(row.completion_tokens, 7);
        assert.equal(row.total_tokens, row.prompt_tokens + 7);
        const usageChunks = s.events.filter((e) => Array.isArray(e.choices) && e.choices.length === 0);
        if (includeUsage) {
          assert.equal(usageChunks.length, 1);
          assert.equal(s.events.at(-1), usageChunks[0]);
          const u = usageChunks[0].usage;
          assert.deepEqual(
            [u.prompt_tokens, u.completion_tokens, u.total_tokens],
            [row.prompt_tokens, row.completion_tokens, row.total_tokens],
          );
        } else {
          assert.equal(usageChunks.length, 0, "the usage chunk asked on the gateway's behalf is removed");
          assert.ok(
            s.events.every((e) => !("usage" in e)),
            "no usage key in any chunk",
          );
        }
        assert.equal(await assertBooks(keyId, accountId), row.total_tokens);
      });
    }

    for (const upstreamUsage of [false, true]) {
      it(`non-stream ${upstreamUsage ? "with" : "without"} upstream usage → usage_source ${upstreamUsage ? "upstream" : "estimated"}`, async () => {
        upstream.reset();
        const { secret, keyId, accountId } = await freshKey();
        const messages: Message[] = [
          { role: "user", content: `seven words mock:tokens=7${upstreamUsage ? "" : " mock:no-usage"}` },
        ];
        const reply = await post(gw, secret, { model: TEST_MODEL, messages });
        assert.equal(reply.status, 200, reply.text);
        const body = JSON.parse(reply.text);
        assert.equal(body.choices[0].message.content.split(" ").length, 7);
        assert.equal(
          upstream.requests[0]!.body.stream_options,
          undefined,
          "no stream_options on a JSON call",
        );
        const row = await gw.record(reply.requestId);
        assert.equal(row.status, "ok");
        assert.equal(row.usage_source, upstreamUsage ? "upstream" : "estimated");
        assert.equal(
          row.prompt_tokens,
          upstreamUsage ? mockPromptTokens(messages) : countPromptTokens(messages),
          "the upstream's count, or the local one",
        );
        assert.equal(row.completion_tokens, 7);
        assert.deepEqual(
          [body.usage.prompt_tokens, body.usage.completion_tokens, body.usage.total_tokens],
          [row.prompt_tokens, row.completion_tokens, row.total_tokens],
          "the client's usage is the record's",
        );
        assert.equal(await assertBooks(keyId, accountId), row.total_tokens);
      });
    }
  });
}
