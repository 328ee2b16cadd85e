// Issue #11, routing and resilience, end to end: real gateways in front of two or more mock
// upstreams (each steered on its own with setDirectives), the official openai SDK as the
// client. Failover on 500, timeout and connection refused; upstream 429s moving the call and
// answering 429 when every deployment is limited; no retry on 400 or after the first streamed
// byte; cooldowns and their probe; the weighted split, least-busy and latency choices; a
// fallback to a model of another provider type; every deployment down; what records,
// headers, metrics and `gateway deployments` show; cooldowns shared through Redis.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import OpenAI, { APIError } from "openai";
import { stringify } from "yaml";
import type { ConfigInput } from "../src/config/schema.ts";
import type { AttemptRecord } from "../src/records/draft.ts";
import { runCli } from "./support/cli.ts";
import { type StoreKind, startTestGateway, type TestGateway } from "./support/gateway.ts";
import { freePort } from "./support/listen.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { storeSuite } from "./support/postgres.ts";
import { parseStream as parseEvents, until } from "./support/stream-assertions.ts";

const UPSTREAM_SECRET = "sk-upstream-secret-123";
const REDIS_URL = "redis://127.0.0.1:6379";
const TIMEOUTS = { connect_ms: 1_000, first_byte_ms: 2_000, idle_ms: 2_000, total_ms: 10_000 };

type ProviderInput = ConfigInput["providers"][number];
type ModelInput = ConfigInput["models"][number];

function mockProvider(id: string, url: string, timeouts: Partial<typeof TIMEOUTS> = {}): ProviderInput {
  return {
    id,
    type: "openai-compatible",
    base_url: url,
    api_key_env: "MOCK_UPSTREAM_KEY",
    timeouts: { ...TIMEOUTS, ...timeouts },
  };
}

/** Two mock upstreams, `a` and `b`, each steered on its own (setDirectives). */
interface Pair {
  a: MockUpstream;
  b: MockUpstream;
  providers: ProviderInput[];
  close(): Promise<unknown>;
}

async function twoMocks(): Promise<Pair> {
  const a = await startMockUpstream();
  const b = await startMockUpstream();
  return {
    a,
    b,
    providers: [mockProvider("a", a.url), mockProvider("b", b.url)],
    close: () => Promise.all([a.close(), b.close()]),
  };
}

/** A model deployed on a, then b (`ordered`). */
function onAThenB(id: string, fields: Partial<ModelInput> = {}): ModelInput {
  return { id, routing: "ordered", deployments: [{ provider: "a" }, { provider: "b" }], ...fields };
}

interface Routed {
  gw: TestGateway;
  client: OpenAI;
  secret: string;
  keyId: string;
  accountId: string;
}

const running: TestGateway[] = [];
after(async () => {
  await Promise.all(running.map((gw) => gw.close()));
});

/** A gateway offering `models` (all on the default plan) over `providers`. */
async function routed(
  providers: ProviderInput[],
  models: ModelInput[],
  extra: Partial<ConfigInput> = {},
  store: StoreKind = "sqlite",
): Promise<Routed> {
  const gw = await startTestGateway({
    store,
    config: {
      log_level: "warn",
      providers,
      models,
      plans: [{ id: "default", quota_tokens: 1_000_000_000, models: models.map((m) => m.id) }],
      routing: { backoff: { initial_ms: 5, max_ms: 20 }, ...extra.routing },
      ...extra,
    },
  });
  running.push(gw);
  const accountId = await gw.account(`routing-${randomUUID()}`);
  const key = await gw.key(accountId);
  const client = new OpenAI({ apiKey: key.secret, baseURL: gw.baseURL, maxRetries: 0 });
  return { gw, client, secret: key.secret, keyId: key.id, accountId };
}

/** A streamed answer: its text, usage, error event and whether it ended with [DONE]. */
function parseStream(body: string) {
  const { events, contents, done } = parseEvents(body);
  return {
    done,
    text: contents.join(""),
    usage: events.findLast((e) => e.usage)?.usage as { total_tokens: number } | undefined,
    error: events.find((e) => e.error)?.error as { code: string } | undefined,
  };
}

function attemptsOf(record: { attempts: string | null }): AttemptRecord[] {
  return record.attempts === null ? [] : (JSON.parse(record.attempts) as AttemptRecord[]);
}

const summary = (attempts: AttemptRecord[]) =>
  attempts.map((a) => `${a.provider} ${a.outcome} ${a.status ?? "-"}`);

/** The attempts with their times, for the test's diagnostics: "a timeout 1003 ms, b ok 4 ms". */
const timed = (record: { attempts: string | null; latency_ms: number }) =>
  `${attemptsOf(record)
    .map((a) => `${a.provider} ${a.outcome} ${a.ms} ms`)
    .join(", ")}; call ${record.latency_ms} ms`;

async function ask(r: Routed, model: string, text = "hello") {
  const { data, response } = await r.client.chat.completions
    .create({ model, messages: [{ role: "user", content: text }] })
    .withResponse();
  const requestId = response.headers.get("x-request-id")!;
  await r.gw.gateway.deps.records.flush();
  return { data, response, requestId, record: await r.gw.record(requestId) };
}

/** A streamed answer read raw, as the client got it. */
async function askStream(r: Routed, model: string, text = "hello") {
  const res = await fetch(`${r.gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${r.secret}`, "content-type": "application/json" },
    body: JSON.stringify({
      model,
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: text }],
    }),
  });
  const body = await res.text();
  await r.gw.gateway.deps.records.flush();
  const requestId = res.headers.get("x-request-id")!;
  return { res, body, requestId, record: await r.gw.record(requestId) };
}

async function apiError(promise: Promise<unknown>): Promise<APIError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof APIError, `expected an APIError, got ${String(err)}`);
    return err;
  }
  assert.fail("the call succeeded");
}

/** The record of the last call of a key, whatever the client saw. */
async function lastRecord(r: Routed) {
  await r.gw.gateway.deps.records.flush();
  return r.gw.gateway.deps.store.db
    .selectFrom("call_records")
    .selectAll()
    .where("key_id", "=", r.keyId)
    .orderBy("created_at", "desc")
    .executeTakeFirstOrThrow();
}

describe("routing: failover before the first byte", () => {
  let a: MockUpstream;
  let b: MockUpstream;
  let r: Routed;
  let refusedPort: number;

  before(async () => {
    a = await startMockUpstream();
    b = await startMockUpstream();
    refusedPort = await freePort();
    r = await routed(
      [
        mockProvider("a", a.url, { first_byte_ms: 600 }),
        mockProvider("b", b.url),
        mockProvider("dead", `http://127.0.0.1:${refusedPort}/v1`),
      ],
      [
        {
          id: "smart",
          routing: "ordered",
          deployments: [
            { provider: "a", upstream_model: "model-a" },
            { provider: "b", upstream_model: "model-b" },
          ],
        },
        {
          id: "refused-first",
          routing: "ordered",
          deployments: [
            { provider: "dead", upstream_model: "model-x" },
            { provider: "b", upstream_model: "model-b" },
          ],
        },
      ],
      // failures never add up to a cooldown here: each test sees the failover itself
      { routing: { cooldown: { failures: 1000 } } },
    );
  });
  after(async () => {
    a.setDirectives("");
    await Promise.all([a.close(), b.close()]);
  });

  for (const [fault, outcome, status] of [
    ["mock:status=500", "server_error", "500"],
    ["mock:hang", "timeout", "-"],
  ] as const)
    for (const stream of [false, true])
      test(`${fault} on the first deployment: answered by the second (${stream ? "stream" : "JSON"})`, async (t) => {
        a.reset();
        b.reset();
        a.setDirectives(fault);
        try {
          const got = stream ? await askStream(r, "smart") : await ask(r, "smart");
          const headers = "response" in got ? got.response.headers : got.res.headers;
          assert.equal(headers.get("x-gateway-attempts"), "2");
          assert.equal(headers.get("x-gateway-deployment"), null, "not told unless the operator says so");
          if ("body" in got) {
            const s = parseStream(got.body);
            assert.equal(s.done, true);
            assert.equal(s.usage?.total_tokens, got.record.total_tokens);
          } else
            assert.equal(
              got.data.usage?.total_tokens,
              got.record.total_tokens,
              "charged what the client was told",
            );
          assert.deepEqual(summary(attemptsOf(got.record)), [`a ${outcome} ${status}`, "b ok -"]);
          t.diagnostic(timed(got.record));
          assert.equal(got.record.provider, "b");
          assert.equal(got.record.upstream_model, "model-b", "the record keeps the deployment that answered");
          assert.equal(got.record.status, "ok");
          assert.equal(a.requests.length, 1);
          assert.equal(b.requests.length, 1);
          assert.equal(b.requests[0]!.body.model, "model-b");
        } finally {
          a.setDirectives("");
        }
      });

  test("connection refused on the first deployment: answered by the second", async (t) => {
    b.reset();
    const got = await ask(r, "refused-first");
    t.diagnostic(timed(got.record));
    assert.equal(got.response.headers.get("x-gateway-attempts"), "2");
    assert.deepEqual(summary(attemptsOf(got.record)), ["dead network -", "b ok -"]);
    assert.equal(b.requests.length, 1);
  });

  for (const stream of [false, true])
    test(`an upstream 400 is not retried: the client gets it (${stream ? "stream" : "JSON"})`, async () => {
      a.reset();
      b.reset();
      a.setDirectives("mock:status=400");
      try {
        const err = await apiError(
          r.client.chat.completions.create({
            model: "smart",
            stream,
            messages: [{ role: "user", content: "hello" }],
          }),
        );
        assert.equal(err.status, 400);
        assert.equal(err.code, "upstream_bad_request");
        assert.equal(err.headers?.get("x-gateway-attempts"), "1");
        assert.equal(b.requests.length, 0, "the second deployment gets nothing");
        const record = await lastRecord(r);
        assert.deepEqual(summary(attemptsOf(record)), ["a client_error 400"]);
        assert.equal(record.total_tokens, 0);
      } finally {
        a.setDirectives("");
      }
    });

  test("no retry after the first streamed byte: the mid-stream failure reaches the client", async () => {
    a.reset();
    b.reset();
    a.setDirectives("mock:drop-after=2");
    try {
      const got = await askStream(r, "smart");
      assert.equal(got.res.status, 200);
      const s = parseStream(got.body);
      assert.equal(s.done, false, "no [DONE]");
      assert.equal(s.error?.code, "upstream_error");
      assert.equal(s.text, "Hello world", "the two chunks the first deployment sent");
      assert.equal(b.requests.length, 0, "nothing retried after the first byte");
      assert.equal(got.res.headers.get("x-gateway-attempts"), "1");
      assert.deepEqual(summary(attemptsOf(got.record)), ["a ok -"]);
      assert.equal(got.record.status, "upstream_error");
      assert.ok(got.record.completion_tokens >= 2, "the delivered tokens are charged");
    } finally {
      a.setDirectives("");
    }
  });
});

describe("routing: content safety's JSON answer is retried until it is released", () => {
  let p: Pair;
  let r: Routed;

  before(async () => {
    p = await twoMocks();
    r = await routed(p.providers, [onAThenB("safe")], {
      safety: { enabled: true, streaming: "json", reviewers: [{ type: "rules", terms: ["forbidden"] }] },
    });
  });
  after(() => p.close());

  test("a stream request answered as one reviewed JSON body: the first deployment's drop is retried", async () => {
    p.a.setDirectives("mock:drop-after=0");
    const res = await fetch(`${r.gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${r.secret}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "safe", stream: true, messages: [{ role: "user", content: "hello" }] }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /application\/json/);
    const body = (await res.json()) as { object: string };
    assert.equal(body.object, "chat.completion");
    assert.equal(res.headers.get("x-gateway-attempts"), "2");
    assert.equal(p.b.requests.length, 1);
  });
});

describe("routing: upstream rate limits", () => {
  let p: Pair;
  let r: Routed;

  before(async () => {
    p = await twoMocks();
    r = await routed(p.providers, [onAThenB("limited")]);
  });
  after(() => p.close());

  test("a 429 with retry-after moves the call on; every deployment limited answers 429 with the shortest wait", async () => {
    p.a.setDirectives("mock:status=429 mock:retry-after=20");
    const first = await ask(r, "limited");
    assert.deepEqual(summary(attemptsOf(first.record)), ["a rate_limited 429", "b ok -"]);
    const cooldown = r.gw.gateway.routing.cooldowns.get("a/limited");
    assert.equal(cooldown?.reason, "rate_limited");
    assert.ok(cooldown.until > Date.now() + 15_000, "cooled down for its retry-after (20 s)");

    // While a cools down, it gets nothing.
    p.a.reset();
    const second = await ask(r, "limited");
    assert.deepEqual(summary(attemptsOf(second.record)), ["b ok -"]);
    assert.equal(p.a.requests.length, 0);

    // Now b is limited too: the client gets 429 upstream_rate_limited, not 502.
    p.b.setDirectives("mock:status=429 mock:retry-after=7");
    const err = await apiError(
      r.client.chat.completions.create({ model: "limited", messages: [{ role: "user", content: "hello" }] }),
    );
    assert.equal(err.status, 429);
    assert.equal(err.code, "upstream_rate_limited");
    assert.equal((err.error as { type?: string }).type, "upstream_error");
    assert.equal(err.headers?.get("retry-after"), "7", "b's wait, the shortest");
    assert.ok(Number(err.headers?.get("retry-after-ms")) <= 7_000);
    const record = await lastRecord(r);
    assert.deepEqual(summary(attemptsOf(record)), ["b rate_limited 429"]);
    assert.equal(record.http_status, 429);
    assert.equal(record.error_code, "upstream_rate_limited");
    assert.equal(record.total_tokens, 0);

    // Both cooling down for a rate limit: the one free first is tried rather than refused untried.
    p.b.reset();
    p.b.setDirectives("");
    const third = await ask(r, "limited");
    assert.deepEqual(summary(attemptsOf(third.record)), ["b ok -"]);
    assert.equal(r.gw.gateway.routing.cooldowns.get("b/limited"), undefined, "b answered: it is back");
  });
});

describe("routing: cooldowns", () => {
  let p: Pair;
  let r: Routed;

  before(async () => {
    p = await twoMocks();
    r = await routed(p.providers, [onAThenB("cool")], {
      routing: { cooldown: { failures: 2, window_s: 60, seconds: 2 } },
    });
  });
  after(() => p.close());

  test("2 failures cool the deployment down: no call during it, then one probe decides", async () => {
    const cooldowns = r.gw.gateway.routing.cooldowns;
    p.a.setDirectives("mock:status=503");
    for (let i = 0; i < 2; i++) await ask(r, "cool");
    assert.equal(p.a.requests.length, 2);
    const cooling = cooldowns.get("a/cool");
    assert.equal(cooling?.reason, "failures");

    // During the cooldown: every call goes straight to the good deployment.
    let during = 0;
    while (Date.now() < cooling.until - 500 && during < 5) {
      const got = await ask(r, "cool");
      assert.deepEqual(summary(attemptsOf(got.record)), ["b ok -"]);
      during++;
    }
    assert.ok(during > 0, "calls were made during the cooldown");
    assert.equal(p.a.requests.length, 2, "the cooled-down deployment received no call");

    // After it: calls at once, exactly one of which probes (and fails: cooled down again).
    await until(() => Date.now() > cooling.until, "the cooldown to end", 5_000);
    const answers = await Promise.all(Array.from({ length: 4 }, () => ask(r, "cool")));
    assert.equal(p.a.requests.length, 3, "one probe");
    assert.equal(answers.filter((a) => a.record.attempts?.includes('"provider":"a"')).length, 1);
    for (const got of answers) assert.equal(got.record.status, "ok");
    const again = cooldowns.get("a/cool");
    assert.ok(again && again.until > cooling.until, "the failed probe cooled it down again");

    // Healthy again: the next probe brings it back, and it takes calls.
    p.a.setDirectives("");
    await until(() => Date.now() > again.until, "the second cooldown to end", 5_000);
    const probe = await ask(r, "cool");
    assert.deepEqual(summary(attemptsOf(probe.record)), ["a ok -"]);
    assert.equal(cooldowns.get("a/cool"), undefined);
    const after = await ask(r, "cool");
    assert.deepEqual(summary(attemptsOf(after.record)), ["a ok -"]);
  });
});

describe("routing: strategies", () => {
  test("weighted 3:1: the split of 1,000 calls follows the weights", async (t) => {
    const a = await startMockUpstream();
    const b = await startMockUpstream();
    try {
      const r = await routed(
        [mockProvider("a", a.url), mockProvider("b", b.url)],
        [
          {
            id: "split",
            deployments: [
              { provider: "a", weight: 3 },
              { provider: "b", weight: 1 },
            ],
          },
        ],
      );
      let next = 0;
      const worker = async () => {
        while (next < 1000) {
          next++;
          const res = await fetch(`${r.gw.baseURL}/chat/completions`, {
            method: "POST",
            headers: { authorization: `Bearer ${r.secret}`, "content-type": "application/json" },
            body: JSON.stringify({
              model: "split",
              messages: [{ role: "user", content: "hi mock:tokens=1" }],
            }),
          });
          assert.equal(res.status, 200);
          assert.equal(res.headers.get("x-gateway-attempts"), "1");
          await res.text();
        }
      };
      await Promise.all(Array.from({ length: 16 }, worker));
      const toA = a.requests.length;
      t.diagnostic(`a answered ${toA} of 1000, b ${b.requests.length} (weights 3:1, 750 expected)`);
      assert.equal(toA + b.requests.length, 1000);
      assert.ok(Math.abs(toA - 750) <= 50, `a answered ${toA} of 1000`);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  test("least-busy: a call goes to the deployment with fewer calls in flight", async () => {
    const a = await startMockUpstream();
    const b = await startMockUpstream();
    try {
      const r = await routed(
        [
          mockProvider("a", a.url, { first_byte_ms: 30_000 }),
          mockProvider("b", b.url, { first_byte_ms: 30_000 }),
        ],
        [{ id: "busy", routing: "least-busy", deployments: [{ provider: "a" }, { provider: "b" }] }],
      );
      const hung = new AbortController();
      const hanging = r.client.chat.completions
        .create(
          { model: "busy", messages: [{ role: "user", content: "wait mock:hang" }] },
          { signal: hung.signal },
        )
        .catch(() => undefined);
      await until(() => a.inFlight() + b.inFlight() === 1, "the hanging call to reach an upstream");
      const [busy, idle] = a.inFlight() === 1 ? [a, b] : [b, a];
      busy.reset();
      for (let i = 0; i < 4; i++) await ask(r, "busy");
      assert.equal(busy.requests.length, 0, "the busy deployment got none of the calls");
      assert.equal(idle.requests.length, 4, "all four went to the idle one");
      hung.abort();
      await hanging;
      await until(() => busy.inFlight() === 0, "the hung call to end");
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  test("latency: after each has answered once, calls go to the one with the lowest time to first byte", async () => {
    const slow = await startMockUpstream({ latencyMs: 300 });
    const fast = await startMockUpstream();
    try {
      const r = await routed(
        [mockProvider("slow", slow.url), mockProvider("fast", fast.url)],
        [{ id: "quick", routing: "latency", deployments: [{ provider: "slow" }, { provider: "fast" }] }],
      );
      // The first two calls try each unmeasured deployment once.
      for (let i = 0; i < 12; i++) await ask(r, "quick");
      assert.equal(slow.requests.length, 1);
      assert.equal(fast.requests.length, 11);
    } finally {
      await Promise.all([slow.close(), fast.close()]);
    }
  });
});

/**
 * The provider types a fallback can go to, other than the openai-compatible primary: each
 * starts what it needs and says how to tell its answer. A new provider type with a mock is
 * one more entry (e.g. the Anthropic adapter's, once it exists).
 */
const FALLBACK_TYPES: {
  type: string;
  start(): Promise<{ provider: ProviderInput; upstreamModel: string; close(): Promise<void> }>;
  answered(text: string): boolean;
}[] = [
  {
    type: "demo",
    start: async () => ({
      provider: { id: "other", type: "demo" },
      upstreamModel: "demo-echo",
      close: async () => {},
    }),
    answered: (text) => text.startsWith("Hello from the demo model."),
  },
];

describe("routing: fallback to a model of another provider type", () => {
  for (const target of FALLBACK_TYPES)
    test(`every deployment failed: the fallback on ${target.type} answers, charged alone`, async () => {
      const p = await twoMocks();
      const other = await target.start();
      try {
        p.a.setDirectives("mock:status=500");
        p.b.setDirectives("mock:status=502");
        const r = await routed(
          [...p.providers, other.provider],
          [
            onAThenB("smart", { fallbacks: ["backup"] }),
            { id: "backup", provider: other.provider.id, upstream_model: other.upstreamModel },
          ],
        );
        for (const stream of [false, true]) {
          const got = stream ? await askStream(r, "smart") : await ask(r, "smart");
          const text =
            "body" in got ? parseStream(got.body).text : (got.data.choices[0]!.message.content ?? "");
          assert.ok(target.answered(text), `the fallback answered: ${text}`);
          const attempts = attemptsOf(got.record);
          assert.deepEqual(
            attempts.map((x) => `${x.model} ${x.provider} ${x.outcome}`),
            ["smart a server_error", "smart b server_error", `backup ${other.provider.id} ok`],
          );
          assert.equal(got.record.public_model, "smart", "the model the client asked for");
          assert.equal(got.record.provider, other.provider.id);
          assert.equal(got.record.upstream_model, other.upstreamModel);
          const told =
            "body" in got ? parseStream(got.body).usage?.total_tokens : got.data.usage?.total_tokens;
          assert.equal(got.record.total_tokens, told, "only the answer the client received is charged");
        }
        assert.equal((await r.gw.recorded("key_id", r.keyId)).tokens > 0, true);
      } finally {
        await Promise.all([p.close(), other.close()]);
      }
    });
});

describe("routing: every deployment down", () => {
  test("502 with the last cause, sanitised; 504 when the last failure was a timeout; nothing charged", async () => {
    const a = await startMockUpstream();
    const b = await startMockUpstream();
    const refused = await freePort();
    try {
      a.setDirectives("mock:status=503");
      b.setDirectives("mock:status=500");
      const r = await routed(
        [
          mockProvider("a", a.url),
          mockProvider("b", b.url, { first_byte_ms: 600 }),
          mockProvider("dead", `http://127.0.0.1:${refused}/v1`),
        ],
        [
          {
            id: "down",
            routing: "ordered",
            deployments: [{ provider: "dead" }, { provider: "a" }, { provider: "b" }],
          },
          { id: "slow-last", routing: "ordered", deployments: [{ provider: "a" }, { provider: "b" }] },
        ],
        { routing: { cooldown: { failures: 1000 } } },
      );
      const err = await apiError(
        r.client.chat.completions.create({ model: "down", messages: [{ role: "user", content: "hello" }] }),
      );
      assert.equal(err.status, 502);
      assert.equal(err.code, "upstream_error");
      assert.match(err.message, /HTTP 500/, "the last cause");
      assert.ok(!err.message.includes(UPSTREAM_SECRET) && !err.message.includes("10.0.0.5"), err.message);
      assert.equal(err.headers?.get("x-gateway-attempts"), "3");
      const record = await lastRecord(r);
      assert.deepEqual(summary(attemptsOf(record)), [
        "dead network -",
        "a server_error 503",
        "b server_error 500",
      ]);
      assert.equal(record.total_tokens, 0);
      assert.equal(record.provider, "b", "the last deployment tried");

      b.setDirectives("mock:hang");
      const timedOut = await apiError(
        r.client.chat.completions.create({
          model: "slow-last",
          messages: [{ role: "user", content: "hello" }],
        }),
      );
      assert.equal(timedOut.status, 504);
      assert.equal(timedOut.code, "upstream_timeout");
      assert.deepEqual(summary(attemptsOf(await lastRecord(r))), ["a server_error 503", "b timeout -"]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe("routing: visibility", () => {
  test("the deployment header when asked for, metrics per deployment, and `gateway deployments`", async () => {
    const p = await twoMocks();
    try {
      p.a.setDirectives("mock:status=500");
      const { providers } = p;
      const models = [onAThenB("seen")];
      const routing = { expose_deployment: true, cooldown: { failures: 1, window_s: 60, seconds: 600 } };
      const r = await routed(providers, models, { routing });
      const got = await ask(r, "seen");
      assert.equal(got.response.headers.get("x-gateway-deployment"), "b/seen");
      assert.equal(got.response.headers.get("x-gateway-attempts"), "2");

      const unauthorised = await fetch(`${r.gw.baseURL}/chat/completions`, { method: "POST" });
      assert.equal(unauthorised.status, 401);
      assert.equal(unauthorised.headers.get("x-gateway-attempts"), "0", "every answer carries the count");
      await unauthorised.text();

      const metrics = await (await fetch(`${r.gw.origin}/metrics`)).text();
      assert.match(
        metrics,
        /gateway_deployment_attempts_total\{deployment="a\/seen",outcome="server_error"\} 1/,
      );
      assert.match(metrics, /gateway_deployment_attempts_total\{deployment="b\/seen",outcome="ok"\} 1/);
      assert.match(metrics, /gateway_deployment_cooldowns_total\{deployment="a\/seen",reason="failures"\} 1/);
      assert.match(metrics, /gateway_deployment_in_flight\{deployment="b\/seen"\} 0/);
      assert.match(metrics, /gateway_deployment_cooling_down\{deployment="a\/seen"\} 1/);

      // The CLI, another process on the same store, sees what the running gateway published.
      const dir = r.gw.gateway.deps.config.store.data_dir;
      const file = join(dir, "gateway.yaml");
      writeFileSync(
        file,
        stringify({
          providers,
          models,
          plans: [{ id: "default", quota_tokens: 1_000_000_000, models: ["seen"] }],
          store: { data_dir: dir },
        }),
      );
      await r.gw.gateway.routing.publisher.publish();
      const cli = await runCli(["deployments", "--json"], { GATEWAY_CONFIG: file }, { cwd: dir });
      assert.equal(cli.code, 0, cli.stderr);
      const rows = cli.json.deployments as Record<string, any>[];
      const byId = Object.fromEntries(rows.map((row) => [row.deployment, row]));
      assert.deepEqual(Object.keys(byId).sort(), ["a/seen", "b/seen"]);
      assert.equal(byId["a/seen"].instances, 1);
      assert.equal(byId["a/seen"].cooldown_reason, "failures");
      assert.ok(Date.parse(byId["a/seen"].cooling_until) > Date.now());
      assert.equal(byId["b/seen"].cooling_until, null);
      assert.equal(byId["b/seen"].in_flight, 0);
      assert.equal(typeof byId["b/seen"].latency_ms, "number");
      const human = await runCli(["deployments"], { GATEWAY_CONFIG: file }, { cwd: dir });
      assert.match(human.stdout, /a\/seen .* cooling down \d+s more \(failures\)/);
      assert.match(human.stdout, /b\/seen .* healthy/);
    } finally {
      await p.close();
    }
  });
});

describe("routing: cooldowns shared through Redis", await storeSuite("postgres+redis"), () => {
  const prefix = `gw-test-${randomUUID()}:`;
  after(async () => {
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    await redis.quit();
  });

  test("two gateways: failures add up across them, and a cooldown one starts keeps the other off", async () => {
    const p = await twoMocks();
    try {
      p.a.setDirectives("mock:status=500");
      const setup = () =>
        routed(
          p.providers,
          [onAThenB("shared")],
          {
            routing: { cooldown: { failures: 2, window_s: 60, seconds: 600 } },
            store: { redis_url: REDIS_URL, redis_prefix: prefix },
          },
          // Redis shares state between instances of one PostgreSQL store
          "postgres",
        );
      const one = await setup();
      const two = await setup();
      await ask(one, "shared");
      assert.equal(one.gw.gateway.routing.cooldowns.get("a/shared"), undefined, "one failure: not yet");
      await ask(two, "shared");
      assert.equal(
        two.gw.gateway.routing.cooldowns.get("a/shared")?.reason,
        "failures",
        "the 2nd failure of the two",
      );
      await until(
        () => one.gw.gateway.routing.cooldowns.get("a/shared") !== undefined,
        "the first gateway hears of it",
      );
      p.a.reset();
      for (const r of [one, two, one]) {
        const got = await ask(r, "shared");
        assert.deepEqual(summary(attemptsOf(got.record)), ["b ok -"]);
      }
      assert.equal(p.a.requests.length, 0, "neither gateway calls the cooled-down deployment");
    } finally {
      await p.close();
    }
  });
});
