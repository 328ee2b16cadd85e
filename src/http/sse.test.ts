import assert from "node:assert/strict";
import type { Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import Fastify, { type FastifyInstance, type FastifyReply } from "fastify";
import type { StreamSink } from "../relay/call.ts";
import { sseSink } from "./sse.ts";

/** Counts the socket's writes to the kernel (one per _write or _writev: one write(2) each). */
function countWrites(socket: Socket): () => number {
  let writes = 0;
  const s = socket as unknown as Record<"_write" | "_writev", (...args: unknown[]) => unknown>;
  for (const name of ["_write", "_writev"] as const) {
    const original = s[name].bind(socket);
    s[name] = (...args: unknown[]) => {
      writes++;
      return original(...args);
    };
  }
  return () => writes;
}

describe("SSE writer", () => {
  let app: FastifyInstance;
  let base: string;
  /** what the route under test does with its sink; set by each test */
  let handler: (sink: StreamSink, reply: FastifyReply) => Promise<void>;

  before(async () => {
    app = Fastify();
    app.post("/stream", async (_request, reply) => {
      const sink = sseSink(reply, { stalledMs: 5_000 });
      await handler(sink, reply);
    });
    base = await app.listen({ port: 0, host: "127.0.0.1" });
  });
  after(() => app.close());

  test("the events of one turn, carried through promise jobs as the relay does, leave in one write", async () => {
    let writes: (() => number) | undefined;
    let during = -1;
    handler = async (sink, reply) => {
      writes = countWrites(reply.raw.socket!);
      sink.start();
      for (let i = 0; i < 20; i++) {
        await Promise.resolve(); // each event reaches the sink a promise job after the last
        sink.event(JSON.stringify({ i }));
      }
      await new Promise((resolve) => setImmediate(resolve)); // the turn is over: written
      during = writes();
      sink.end();
    };
    const res = await fetch(`${base}/stream`, { method: "POST" });
    const body = await res.text();
    assert.equal(res.headers.get("content-type"), "text/event-stream; charset=utf-8");
    assert.deepEqual(
      body.split("\n\n").filter(Boolean),
      Array.from({ length: 20 }, (_, i) => `data: {"i":${i}}`),
    );
    // the head and all 20 events: one write; without the cork, one per event
    assert.equal(during, 1);
  });

  test("an event is not held past its turn: the client reads it while the next is still to come", {
    timeout: 10_000,
  }, async () => {
    let readFirst!: () => void;
    const clientHasFirst = new Promise<void>((resolve) => (readFirst = resolve));
    handler = async (sink) => {
      sink.start();
      sink.event("first", "one");
      await clientHasFirst; // would wait forever if the first event sat in a corked buffer
      sink.event("second", "two");
      sink.end();
    };
    const res = await fetch(`${base}/stream`, { method: "POST" });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes("\n\n")) text += (await reader.read()).value ?? "";
    assert.equal(text, "event: one\ndata: first\n\n");
    readFirst();
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += r.value;
    assert.equal(text, "event: one\ndata: first\n\nevent: two\ndata: second\n\n");
  });

  test("more than the socket's buffer in one turn: the sink asks the writer to wait, and every byte arrives", async () => {
    const big = "x".repeat(64 * 1024);
    let waited = 0;
    handler = async (sink) => {
      sink.start();
      for (let i = 0; i < 8; i++) {
        const full = sink.event(`${i}${big}`);
        if (full) {
          waited++;
          await full;
        }
      }
      sink.end();
    };
    const res = await fetch(`${base}/stream`, { method: "POST" });
    const events = (await res.text()).split("\n\n").filter(Boolean);
    assert.deepEqual(
      events.map((e) => e.slice(0, 7)),
      Array.from({ length: 8 }, (_, i) => `data: ${i}`),
    );
    assert.ok(events.every((e) => e.length === 7 + big.length));
    assert.ok(waited > 0, "64 KB events overflow the socket's 16 KB buffer");
  });
});
