import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fakeProvider, testModel } from "../../test/support/models.ts";
import { routingSchema } from "../config/schema.ts";
import { parseChatRequest } from "../domain/chat-request.ts";
import type { Chunk, Completion } from "../domain/completion.ts";
import type { ResolvedModel } from "../models/registry.ts";
import { Metrics } from "../observability/metrics.ts";
import type { Provider, UpstreamCall } from "../providers/types.ts";
import { CallDraft } from "../records/draft.ts";
import { MemoryCooldowns } from "../routing/cooldowns.ts";
import { Router } from "../routing/route.ts";
import { Traffic } from "../routing/traffic.ts";
import { type Opened, openAnswer } from "./open.ts";

const request = parseChatRequest({ model: "public", messages: [{ role: "user", content: "hi" }] });
const call = (): UpstreamCall => ({
  request,
  upstreamModel: "upstream-model",
  outputBound: 100,
  signal: new AbortController().signal,
});

const completion: Completion = {
  object: "chat.completion",
  choices: [{ index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" }],
};

const piece = (content: string): Chunk => ({
  object: "chat.completion.chunk",
  choices: [{ index: 0, delta: { content }, finish_reason: null }],
});

function model(provider: Provider): ResolvedModel {
  return testModel({ id: "public" }, [{ providerId: "p-one", provider, upstreamModel: "upstream-model" }]);
}

/** openAnswer through a route of its own, as the relay calls it. */
function open(metrics: Metrics, m: ResolvedModel, c: UpstreamCall, stream: boolean): Promise<Opened> {
  const router = new Router({
    settings: routingSchema.parse({}),
    cooldowns: new MemoryCooldowns({ failures: 3, windowMs: 60_000, ms: 30_000 }),
    traffic: new Traffic(),
    metrics,
  });
  const ctx = { draft: new CallDraft("req-test"), setHeaders: () => {} };
  const route = router.route(m, c.signal);
  return stream ? openAnswer(metrics, ctx, route, c, true) : openAnswer(metrics, ctx, route, c, false);
}

/** How many upstream calls the histogram recorded, by outcome, for provider p-one. */
async function observed(metrics: Metrics): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await metrics.upstreamSeconds.get()).values)
    if (v.metricName === "gateway_upstream_duration_seconds_count" && v.labels.provider === "p-one")
      out[String(v.labels.outcome)] = v.value;
  return out;
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe("openAnswer", () => {
  test("completion: the provider's whole answer, observed as ok", async () => {
    const metrics = new Metrics();
    const seen: UpstreamCall[] = [];
    const c = call();
    const opened = await open(
      metrics,
      model(
        fakeProvider({
          complete: async (x) => {
            seen.push(x);
            return completion;
          },
        }),
      ),
      c,
      false,
    );
    assert.deepEqual(opened, { kind: "completion", completion });
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.request, c.request);
    assert.equal(seen[0]!.upstreamModel, "upstream-model");
    assert.equal(seen[0]!.outputBound, c.outputBound);
    assert.equal(
      seen[0]!.signal,
      c.signal,
      "one possible attempt: the client's signal, no deadline of the routing's",
    );
    assert.deepEqual(await observed(metrics), { ok: 1 });
  });

  test("a failed completion rejects with the provider's error, observed as error", async () => {
    const metrics = new Metrics();
    const failure = new Error("upstream 500");
    await assert.rejects(
      open(metrics, model(fakeProvider({ complete: () => Promise.reject(failure) })), call(), false),
      (err) => err === failure,
    );
    assert.deepEqual(await observed(metrics), { error: 1 });
  });

  test("stream: the first chunk has arrived before openAnswer resolves, and the stream is whole", async () => {
    const metrics = new Metrics();
    const log: string[] = [];
    const chunks = [piece("a"), piece("b"), piece("c")];
    const provider = fakeProvider({
      async *stream() {
        for (const [i, c] of chunks.entries()) {
          log.push(`upstream yields ${i}`);
          yield c;
        }
      },
    });
    const opened = await open(metrics, model(provider), call(), true);
    assert.equal(opened.kind, "stream");
    assert.deepEqual(log, ["upstream yields 0"]);
    if (opened.kind !== "stream") return;
    assert.deepEqual(await observed(metrics), {}, "a stream is observed when it is over, not when it opens");
    const got = await collect(opened.chunks);
    assert.equal(got.length, 3);
    for (const [i, c] of got.entries()) assert.equal(c, chunks[i]);
  });

  test("stream: a failure before the first chunk rejects openAnswer, observed as error", async () => {
    const metrics = new Metrics();
    const failure = new Error("connection refused");
    const provider = fakeProvider({
      // biome-ignore lint/correctness/useYield: the upstream fails before its first chunk
      async *stream() {
        throw failure;
      },
    });
    await assert.rejects(open(metrics, model(provider), call(), true), (err) => err === failure);
    assert.deepEqual(await observed(metrics), { error: 1 });
  });

  test("stream: the provider's stream() throwing synchronously rejects as well", async () => {
    const metrics = new Metrics();
    const failure = new Error("bad config");
    const provider = fakeProvider({
      stream: () => {
        throw failure;
      },
    });
    await assert.rejects(open(metrics, model(provider), call(), true), (err) => err === failure);
    assert.deepEqual(await observed(metrics), { error: 1 });
  });

  test("stream: an empty upstream stream opens and yields nothing", async () => {
    const metrics = new Metrics();
    const provider = fakeProvider({ async *stream() {} });
    const opened = await open(metrics, model(provider), call(), true);
    assert.equal(opened.kind, "stream");
    if (opened.kind === "stream") assert.deepEqual(await collect(opened.chunks), []);
  });

  test("stop() returns the upstream's iterator (its finally runs) after a partial read", async () => {
    const log: string[] = [];
    const provider = fakeProvider({
      async *stream() {
        try {
          yield piece("a");
          yield piece("b");
          log.push("read on");
        } finally {
          log.push("upstream closed");
        }
      },
    });
    const opened = await open(new Metrics(), model(provider), call(), true);
    if (opened.kind !== "stream") return assert.fail("expected a stream");
    const reader = opened.chunks[Symbol.asyncIterator]();
    await reader.next();
    await opened.stop();
    assert.deepEqual(log, ["upstream closed"]);
  });

  test("stop() settles when the upstream iterator has no return() or its return() fails", async () => {
    const rejecting: AsyncIterable<Chunk> = {
      [Symbol.asyncIterator]: () => ({
        next: async () => ({ done: false, value: piece("a") }),
        return: () => Promise.reject(new Error("socket already gone")),
      }),
    };
    const bare: AsyncIterable<Chunk> = {
      [Symbol.asyncIterator]: () => ({ next: async () => ({ done: false, value: piece("a") }) }),
    };
    for (const stream of [rejecting, bare]) {
      const opened = await open(new Metrics(), model(fakeProvider({ stream: () => stream })), call(), true);
      if (opened.kind !== "stream") return assert.fail("expected a stream");
      await opened.stop();
    }
  });

  test("observe() records the stream's outcome in the upstream histogram", async () => {
    const metrics = new Metrics();
    const provider = fakeProvider({
      async *stream() {
        yield piece("a");
      },
    });
    const ok = await open(metrics, model(provider), call(), true);
    const failed = await open(metrics, model(provider), call(), true);
    if (ok.kind !== "stream" || failed.kind !== "stream") return assert.fail("expected streams");
    ok.observe("ok");
    failed.observe("error");
    assert.deepEqual(await observed(metrics), { ok: 1, error: 1 });
  });
});
