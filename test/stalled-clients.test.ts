// Streaming clients that read nothing, on every client API and every kind of upstream: the
// upstream's progress stalls (backpressure reaches its socket), and what the gateway holds for
// them is a small bound per call, not the answer (second outside audit, item 5). The gateway
// runs in a process of its own (./support/gateway-process.ts) so that its heap, measured after
// full collections, holds it alone: not this test's clients or upstream.
//
// Each call's answer is over 69 MB of events, a word each (as models stream, a token at a
// time), far more than the sockets' kernel buffers take (5-10 MB a call, on both sides of the
// gateway: chat completions stalled after about 7 MB in the audit). Before the fix the
// upstreams stalled as late, but the gateway kept each call's text as V8 ropes (a 32-byte node
// per word read, in the meter and again in a Responses item): 100 such clients held 120-280 MB
// (heap +94-219 MB), against 40-57 MB (heap +15-26 MB) now.
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import { parseChatRequest } from "../src/domain/chat-request.ts";
import { DEFAULT_PROMPT_OVERHEADS, promptUpperBound } from "../src/providers/prompt-bound.ts";
import { type FirehoseUpstream, startFirehose } from "./support/firehose-upstream.ts";
import { startTestGateway, TEST_MODEL } from "./support/gateway.ts";
import { type GatewayProcess, type HeapFigures, startGatewayProcess } from "./support/gateway-process.ts";
import { startMockUpstream } from "./support/mock-openai-upstream.ts";
import { until } from "./support/stream-assertions.ts";

const CLIENTS = Number(process.env.STALLED_CLIENTS ?? 100);
/** words per answer: 69-103 MB of events in each wire format */
const DELTAS = 600_000;
/**
 * How long the upstreams may take to stall: 12-22 s here, some seconds apart, as the calls
 * stream together (the upstream holds every answer until all calls reached it); several times
 * that on a loaded machine, where the 700 MB the sockets take is slower to push through.
 */
const STALL_WITHIN_MS = Number(process.env.STALLED_WITHIN_MS ?? 240_000);
/**
 * The gateway's limit for a client that reads nothing, beyond the test: the calls are ended by
 * their clients leaving once measured (the limit ends a call the same way, by closing it), so
 * that a slow machine's stall cannot be cut short by the limit before it is measured.
 */
const STALL_MS = STALL_WITHIN_MS + 120_000;
/**
 * What 100 stalled calls may add to the gateway's memory after collection, its heap and the
 * Buffers outside it: 768 KB a call, where the kernel's socket buffers took 5-10 MB of each
 * answer. Measured 410-585 KB a call: what is read ahead of the client (Node reads a socket 64
 * KB at a time, past the 16 KB of its buffer and of the upstream body's, and the first read
 * stays as long as the headers sliced from it: about 200 KB), the events waiting for the
 * client's socket (16 KB, with their write requests), the call's own objects (request, record,
 * renderer, sockets: about 60 KB), a sample of its output for the local count (at most 68 K
 * characters, src/lib/streamed-text.ts) and, on the Responses API, the text delivered, kept for
 * the closing events and the store (about 150 KB at a word an event).
 */
const HEAP_BOUND = CLIENTS * 768 * 1024;
/**
 * What may stay once the calls ended: what the first calls fill (caches, statistics; up to 3.2
 * MB measured). A call that left 80 KB behind would pass it.
 */
const AFTER_BOUND = 8 * 1024 * 1024;

const MB = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const total = (h: HeapFigures) => h.heapUsed + h.external;

const TIMEOUTS = { connect_ms: 2_000, first_byte_ms: 120_000, idle_ms: 60_000, total_ms: 600_000 };

type Api = "chat" | "messages" | "responses";
const PATHS: Record<Api, string> = {
  chat: "/v1/chat/completions",
  messages: "/v1/messages",
  responses: "/v1/responses",
};

function body(api: Api, model: string, text: string): string {
  if (api === "responses")
    return JSON.stringify({ model, stream: true, max_output_tokens: 1_000_000, input: text });
  return JSON.stringify({
    model,
    stream: true,
    max_tokens: 1_000_000,
    messages: [{ role: "user", content: text }],
  });
}

const CASES: Array<{ name: string; api: Api; model: string }> = [
  { name: "chat completions from an OpenAI-compatible upstream", api: "chat", model: "fh-openai" },
  { name: "chat completions translated from Anthropic", api: "chat", model: "fh-anthropic" },
  { name: "Messages from Anthropic (native)", api: "messages", model: "fh-anthropic" },
  { name: "Messages translated from an OpenAI-compatible upstream", api: "messages", model: "fh-openai" },
  { name: "Responses translated from an OpenAI-compatible upstream", api: "responses", model: "fh-openai" },
  { name: "Responses from OpenAI's Responses API (native)", api: "responses", model: "fh-responses" },
];

describe(`${CLIENTS} streaming clients that read nothing`, {
  timeout: 6 * (STALL_WITHIN_MS + 120_000),
}, () => {
  let upstream: FirehoseUpstream;
  let gw: GatewayProcess;
  before(async () => {
    upstream = await startFirehose({ deltas: DELTAS });
    const provider = { api_key_env: "MOCK_UPSTREAM_KEY", timeouts: TIMEOUTS };
    gw = await startGatewayProcess({
      server: {
        host: "127.0.0.1",
        port: 0,
        body_limit_bytes: 64 * 1024,
        shutdown_grace_ms: 5_000,
        stream_stall_ms: STALL_MS,
      },
      log_level: "warn",
      providers: [
        { id: "openai", type: "openai-compatible", base_url: upstream.url, ...provider },
        { id: "anthropic", type: "anthropic", base_url: upstream.origin, ...provider },
        {
          id: "responses",
          type: "openai-compatible",
          base_url: upstream.url,
          responses_api: "native",
          ...provider,
        },
      ],
      models: [
        { id: "fh-openai", provider: "openai", upstream_model: "m", max_output_tokens: 1_000_000 },
        { id: "fh-anthropic", provider: "anthropic", upstream_model: "m", max_output_tokens: 1_000_000 },
        { id: "fh-responses", provider: "responses", upstream_model: "m", max_output_tokens: 1_000_000 },
      ],
      plans: [{ id: "default", quota_tokens: 1e12, models: ["fh-openai", "fh-anthropic", "fh-responses"] }],
    });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  const send = (socket: Socket, api: Api, payload: string) => {
    const url = new URL(gw.origin);
    socket.write(
      `POST ${PATHS[api]} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${gw.secret}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
    );
  };

  for (const { name, api, model } of CASES)
    it(`${name}: the upstream stalls, and the gateway holds a small bound per call`, async (t) => {
      // warm: the code paths run once, the caches they fill are filled
      for (let i = 0; i < 2; i++) {
        const res = await fetch(`${gw.origin}${PATHS[api]}`, {
          method: "POST",
          headers: { authorization: `Bearer ${gw.secret}`, "content-type": "application/json" },
          body: body(api, model, "warm firehose:2000"),
        });
        assert.equal(res.status, 200);
        await res.text();
      }
      const base = await gw.heap();
      const first = upstream.answers.length;
      const answers = () => upstream.answers.slice(first);
      const written = () => answers().reduce((sum, a) => sum + a.written, 0);

      const url = new URL(gw.origin);
      const payload = body(api, model, "tell me everything");
      const sockets: Socket[] = [];
      upstream.hold();
      try {
        for (let i = 0; i < CLIENTS; i++) {
          const socket = connect(Number(url.port), url.hostname);
          socket.on("error", () => undefined);
          send(socket, api, payload);
          socket.pause(); // and reads nothing from now on
          sockets.push(socket);
        }
        // All at once, so that their stalls come together and none waits long for the others.
        await until(() => answers().length === CLIENTS, "every call reaches the upstream", 60_000);
        upstream.release();
        // The upstream's progress stalls: nothing more written for 2 s.
        let last = -1;
        let still = 0;
        const started = Date.now();
        while (still < 8) {
          await new Promise((resolve) => setTimeout(resolve, 250));
          const now = written();
          still = now === last ? still + 1 : 0;
          last = now;
          assert.ok(
            Date.now() - started < STALL_WITHIN_MS,
            `the upstream still runs after ${Date.now() - started} ms (${MB(now)} written)`,
          );
        }
        const held = await gw.heap();
        assert.equal(await gw.openCalls(), CLIENTS, "every call is still open, waiting for its client");
        const each = answers().map((a) => a.written);
        const size = answers()[0]!.size;
        t.diagnostic(
          `upstream bytes written per call: ${MB(Math.min(...each))}-${MB(Math.max(...each))} of ${MB(size)} ` +
            `(stalled after ${Date.now() - started} ms); gateway heap+external after GC: ` +
            `${MB(total(base))} -> ${MB(total(held))} (+${MB(total(held) - total(base))}, ` +
            `heap +${MB(held.heapUsed - base.heapUsed)}), rss ${MB(base.rss)} -> ${MB(held.rss)}`,
        );
        for (const a of answers()) {
          assert.ok(!a.finished, "no answer was read to its end");
          assert.ok(
            a.written < size / 4,
            `${MB(a.written)} of ${MB(size)} written: the upstream did not stall`,
          );
        }
        assert.ok(
          total(held) - total(base) < HEAP_BOUND,
          `${CLIENTS} stalled calls hold ${MB(total(held) - total(base))} (bound ${MB(HEAP_BOUND)})`,
        );

        // The clients leave; nothing of their calls stays.
        for (const socket of sockets) socket.destroy();
        await until(
          async () => (await gw.openCalls()) === 0,
          "the calls end when their clients leave",
          60_000,
        );
        await until(() => answers().every((a) => a.aborted), "every upstream call is stopped", 10_000);
        const ended = await gw.heap();
        t.diagnostic(
          `after the calls ended (${Date.now() - started} ms): +${MB(total(ended) - total(base))}, ` +
            `rss ${MB(ended.rss)} (what V8 and the allocator keep of the grown heap)`,
        );
        assert.ok(
          total(ended) - total(base) < AFTER_BOUND,
          `${MB(total(ended) - total(base))} stays after the calls ended`,
        );
      } finally {
        upstream.release();
        for (const socket of sockets) socket.destroy();
        // a failed case leaves no call running into the next
        await until(async () => (await gw.openCalls()) === 0, "the calls end", 30_000);
      }
    });
});

// One such client on an in-process gateway, and what it is charged: the stall limit
// (server.stream_stall_ms) ends its call and stops its upstream; what was delivered is charged,
// capped at the reservation.
describe("the stall limit", () => {
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
      assert.ok(rows[0]!.total_tokens <= reserved, `${rows[0]!.total_tokens} charged, ${reserved} reserved`);
    } finally {
      await own.close();
      await slow.close();
    }
  });
});
