import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type TestDeployment, testModel } from "../../test/support/models.ts";
import { type ConfigInput, routingSchema } from "../config/schema.ts";
import { parseChatRequest } from "../domain/chat-request.ts";
import { GatewayError } from "../errors/index.ts";
import { UpstreamError } from "../errors/upstream-error.ts";
import type { ResolvedModel } from "../models/registry.ts";
import { Metrics } from "../observability/metrics.ts";
import type { UpstreamCall } from "../providers/types.ts";
import { MemoryCooldowns } from "./cooldowns.ts";
import { type Attempt, Router } from "./route.ts";
import { Traffic } from "./traffic.ts";

const request = parseChatRequest({ model: "m", messages: [{ role: "user", content: "hi" }] });

function base(signal = new AbortController().signal, req = request): UpstreamCall {
  return { request: req, upstreamModel: "ignored", outputBound: 500, signal };
}

const fail = (status: number, retryAfterMs?: number) =>
  new UpstreamError("status", `the upstream answered HTTP ${status}`, { status, retryAfterMs });

/** An opener answering per deployment id: a string is the answer, an error is thrown. */
type Script = Record<string, string | Error | ((attempt: Attempt) => Promise<string>)>;

interface Setup {
  router: Router;
  cooldowns: MemoryCooldowns;
  traffic: Traffic;
  metrics: Metrics;
  clock: { now: number };
  /** the deployment ids called, in order */
  calls: string[];
  run(model: ResolvedModel, script: Script, signal?: AbortSignal): Promise<{ answer: string; route: Route }>;
}

type Route = ReturnType<Router["route"]>;

function setup(
  routing: NonNullable<ConfigInput["routing"]> = {},
  options: { random?: () => number } = {},
): Setup {
  const clock = { now: 1_000_000 };
  const settings = routingSchema.parse({ backoff: { initial_ms: 0, max_ms: 0 }, ...routing });
  const cooldowns = new MemoryCooldowns(
    {
      failures: settings.cooldown.failures,
      windowMs: settings.cooldown.window_s * 1000,
      ms: settings.cooldown.seconds * 1000,
    },
    () => {},
    () => clock.now,
  );
  const traffic = new Traffic();
  const metrics = new Metrics();
  const router = new Router({
    settings,
    cooldowns,
    traffic,
    metrics,
    now: () => clock.now,
    ...(options.random ? { random: options.random } : {}),
  });
  const calls: string[] = [];
  return {
    router,
    cooldowns,
    traffic,
    metrics,
    clock,
    calls,
    async run(model, script, signal) {
      const route = router.route(model, signal ?? new AbortController().signal);
      try {
        const answer = await route.open(base(route.signal), async (attempt) => {
          calls.push(attempt.deployment.id);
          const step = script[attempt.deployment.id];
          if (step === undefined) throw new Error(`${attempt.deployment.id} was not expected`);
          if (typeof step === "function") return step(attempt);
          if (step instanceof Error) throw step;
          return step;
        });
        return { answer, route };
      } finally {
        route.end();
      }
    },
  };
}

const deployments = (...ids: string[]): TestDeployment[] => ids.map((id) => ({ providerId: id }));
const ordered = (ids: string[], fields: Record<string, unknown> = {}, fallbacks: ResolvedModel[] = []) =>
  testModel({ id: "m", routing: "ordered", ...fields }, deployments(...ids), fallbacks);

/** Rejects with the route's final error; returns it. */
async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("the call succeeded");
}

describe("retries", () => {
  test("a retryable failure moves the call to the next deployment; the attempts say so", async () => {
    const s = setup();
    const { answer, route } = await s.run(ordered(["a", "b"]), { "a/m": fail(500), "b/m": "from b" });
    assert.equal(answer, "from b");
    assert.deepEqual(s.calls, ["a/m", "b/m"]);
    assert.deepEqual(
      route.attempts.map((a) => [a.provider, a.upstream_model, a.outcome, a.status]),
      [
        ["a", "m", "server_error", 500],
        ["b", "m", "ok", null],
      ],
    );
    assert.equal(route.deployment?.id, "b/m");
    assert.deepEqual(route.headers(), { "x-gateway-attempts": "2" });
  });

  test("by default timeouts, network failures, 429, 500, 502-504 and 529 are retried; 408 and 409 when listed", async () => {
    const failures = [
      new UpstreamError("timeout", "slow"),
      new UpstreamError("network", "refused"),
      ...[429, 500, 502, 503, 504, 529].map((s) => fail(s)),
    ];
    for (const err of failures) {
      const s = setup();
      const { answer } = await s.run(ordered(["a", "b"]), { "a/m": err, "b/m": "ok" });
      assert.equal(answer, "ok", `${err.message} is retried`);
    }
    for (const status of [408, 409]) {
      const unlisted = setup();
      await failure(unlisted.run(ordered(["a", "b"]), { "a/m": fail(status), "b/m": "ok" }));
      assert.deepEqual(unlisted.calls, ["a/m"]);
      const listed = setup({ retry_on: [status] });
      assert.equal(
        (await listed.run(ordered(["a", "b"]), { "a/m": fail(status), "b/m": "ok" })).answer,
        "ok",
      );
    }
  });

  test("an upstream 4xx other than 408, 409 and 429 is not retried, whatever retry_on says", async () => {
    for (const status of [400, 401, 403, 404, 422]) {
      const s = setup({ retry_on: [429, 500, "timeout"] });
      const err = fail(status);
      assert.equal(await failure(s.run(ordered(["a", "b"]), { "a/m": err, "b/m": "ok" })), err);
      assert.deepEqual(s.calls, ["a/m"], `${status}: b gets nothing`);
    }
  });

  test("a failure retry_on does not list is not retried; a malformed reply only when listed", async () => {
    const s = setup({ retry_on: [500] });
    const err = fail(503);
    assert.equal(await failure(s.run(ordered(["a", "b"]), { "a/m": err, "b/m": "ok" })), err);
    assert.deepEqual(s.calls, ["a/m"]);
    const malformed = new UpstreamError("malformed", "not JSON");
    const d = setup();
    assert.equal(await failure(d.run(ordered(["a", "b"]), { "a/m": malformed, "b/m": "ok" })), malformed);
    const listed = setup({ retry_on: ["malformed"] });
    assert.equal((await listed.run(ordered(["a", "b"]), { "a/m": malformed, "b/m": "ok" })).answer, "ok");
  });

  test("by default each other deployment is tried once; `retries` sets the number of further attempts", async () => {
    const s = setup();
    const all = { "a/m": fail(500), "b/m": fail(502), "c/m": fail(503) };
    const err = await failure(s.run(ordered(["a", "b", "c"]), all));
    assert.equal(err, all["c/m"], "the last cause");
    assert.deepEqual(s.calls, ["a/m", "b/m", "c/m"]);
    const r = setup({ cooldown: { failures: 100 } });
    await failure(r.run(ordered(["a", "b"], { retries: 3 }), all));
    assert.deepEqual(r.calls, ["a/m", "b/m", "a/m", "a/m"], "untried first, then again in order");
    const none = setup();
    await failure(none.run(ordered(["a", "b"], { retries: 0 }), all));
    assert.deepEqual(none.calls, ["a/m"]);
  });

  test("a fallback model is tried when every deployment failed, with its own retries", async () => {
    const s = setup();
    const fallback = testModel({ id: "fb", routing: "ordered" }, deployments("x", "y"));
    const model = ordered(["a", "b"], { fallbacks: ["fb"] }, [fallback]);
    const { answer, route } = await s.run(model, {
      "a/m": fail(500),
      "b/m": fail(500),
      "x/fb": fail(503),
      "y/fb": "from y",
    });
    assert.equal(answer, "from y");
    assert.deepEqual(
      route.attempts.map((a) => `${a.model} ${a.provider} ${a.outcome}`),
      ["m a server_error", "m b server_error", "fb x server_error", "fb y ok"],
    );
  });

  test("the client gone: no further attempt, recorded as aborted", async () => {
    const s = setup();
    const client = new AbortController();
    const gone = new Error("the client closed the connection");
    gone.name = "ClientGone";
    const err = await failure(
      s.run(
        ordered(["a", "b"]),
        {
          "a/m": async () => {
            client.abort(gone);
            throw gone;
          },
          "b/m": "ok",
        },
        client.signal,
      ),
    );
    assert.equal(err, gone);
    assert.deepEqual(s.calls, ["a/m"]);
  });

  test("a fault of ours (not an upstream failure) is not retried", async () => {
    const s = setup();
    const bug = new TypeError("undefined is not a function");
    assert.equal(await failure(s.run(ordered(["a", "b"]), { "a/m": bug, "b/m": "ok" })), bug);
    assert.deepEqual(s.calls, ["a/m"]);
  });

  test("each attempt gets its model's output bound when the client set none, and its own upstream model", async () => {
    const s = setup();
    const fallback = testModel({ id: "fb", max_output_tokens: 100 }, [
      { providerId: "x", upstreamModel: "x-up" },
    ]);
    const model = ordered(["a"], { fallbacks: ["fb"], max_output_tokens: 4096 }, [fallback]);
    const seen: UpstreamCall[] = [];
    await s.run(model, {
      "a/m": async (attempt) => {
        seen.push(attempt.call);
        throw fail(500);
      },
      "x/x-up": async (attempt) => {
        seen.push(attempt.call);
        return "ok";
      },
    });
    assert.deepEqual(
      seen.map((c) => [c.upstreamModel, c.outputBound]),
      [
        ["m", 500],
        ["x-up", 100],
      ],
    );
  });
});

describe("backoff and the routing's time", () => {
  test("the attempts stay within the longest provider total timeout: no attempt after it", async () => {
    const s = setup({ backoff: { initial_ms: 60_000, max_ms: 60_000 } }, { random: () => 1 });
    const model = testModel({ id: "m", routing: "ordered" }, [
      { providerId: "a", totalMs: 200 },
      { providerId: "b", totalMs: 300 },
    ]);
    const err = fail(500);
    assert.equal(
      await failure(s.run(model, { "a/m": err, "b/m": "ok" })),
      err,
      "the wait would pass the deadline",
    );
    assert.deepEqual(s.calls, ["a/m"]);
  });

  test("one possible attempt: no deadline of the routing's (the provider's own applies)", () => {
    const s = setup();
    const client = new AbortController();
    const route = s.router.route(testModel({ id: "m" }, [{ providerId: "a", totalMs: 10 }]), client.signal);
    assert.equal(route.signal, client.signal);
    route.end();
    const two = s.router.route(
      testModel({ id: "m" }, [
        { providerId: "a", totalMs: 10 },
        { providerId: "b", totalMs: 10 },
      ]),
      client.signal,
    );
    assert.notEqual(two.signal, client.signal);
    client.abort(new Error("gone"));
    assert.ok(two.signal.aborted, "the client's abort reaches the attempts");
    two.end();
  });

  test("backoff is full jitter, growing per attempt up to max_ms", async () => {
    const waits: number[] = [];
    const s = setup(
      { backoff: { initial_ms: 2, max_ms: 5 }, cooldown: { failures: 100 } },
      { random: () => 1 },
    );
    let last = performance.now();
    const step = async () => {
      const now = performance.now();
      waits.push(now - last);
      last = now;
      throw fail(500);
    };
    await failure(s.run(ordered(["a"], { retries: 3 }), { "a/m": step }));
    // attempts 2, 3, 4 wait 2, 4, 5 ms (random() = 1: the whole cap); a timer is measured from
    // libuv's cached loop time, which can be up to a millisecond before `last` was read
    assert.equal(waits.length, 4);
    assert.ok(waits[1]! >= 1 && waits[2]! >= 3 && waits[3]! >= 4, `waits ${waits.map((w) => w.toFixed(1))}`);
  });
});

describe("cooldowns", () => {
  test("`failures` within the window cool a deployment down: skipped while any other is usable", async () => {
    const s = setup({ cooldown: { failures: 2, window_s: 60, seconds: 30 } });
    const model = ordered(["a", "b"]);
    for (let i = 0; i < 2; i++) await s.run(model, { "a/m": fail(500), "b/m": "ok" });
    assert.deepEqual(s.cooldowns.get("a/m"), { until: s.clock.now + 30_000, reason: "failures" });
    s.calls.length = 0;
    for (let i = 0; i < 3; i++) await s.run(model, { "a/m": "from a", "b/m": "ok" });
    assert.deepEqual(s.calls, ["b/m", "b/m", "b/m"], "a gets no traffic while it cools down");
  });

  test("failures outside the window do not add up", async () => {
    const s = setup({ cooldown: { failures: 2, window_s: 10, seconds: 30 } });
    const model = ordered(["a", "b"]);
    await s.run(model, { "a/m": fail(500), "b/m": "ok" });
    s.clock.now += 10_001;
    await s.run(model, { "a/m": fail(500), "b/m": "ok" });
    assert.equal(s.cooldowns.get("a/m"), undefined);
    assert.equal(s.cooldowns.failures("a/m"), 1);
  });

  test("after the cooldown one call probes: a failed probe cools it down again, a good one brings it back", async () => {
    const s = setup({ cooldown: { failures: 1, window_s: 60, seconds: 30 } });
    const model = ordered(["a", "b"]);
    await s.run(model, { "a/m": fail(500), "b/m": "ok" });
    s.clock.now += 30_000;
    // Two calls at once: the first takes the probe, the second goes elsewhere meanwhile.
    let release = () => {};
    const probing = new Promise<string>((resolve) => {
      release = () => resolve("a is back");
    });
    s.calls.length = 0;
    const first = s.run(model, { "a/m": () => probing, "b/m": "ok" });
    await new Promise((r) => setImmediate(r));
    const second = await s.run(model, { "a/m": "not for the second", "b/m": "ok" });
    assert.equal(second.answer, "ok");
    release();
    assert.equal((await first).answer, "a is back");
    assert.deepEqual(s.calls, ["a/m", "b/m"]);
    assert.equal(s.cooldowns.get("a/m"), undefined, "the probe answered: a is back");

    await s.run(model, { "a/m": fail(503), "b/m": "ok" }); // cools down again (failures: 1)
    s.clock.now += 30_000;
    s.calls.length = 0;
    await s.run(model, { "a/m": fail(500), "b/m": "ok" });
    assert.deepEqual(s.calls, ["a/m", "b/m"], "the probe failed and the call moved on");
    assert.deepEqual(s.cooldowns.get("a/m"), { until: s.clock.now + 30_000, reason: "failures" });
  });

  test("a probe cut by the client releases it for the next call", async () => {
    const s = setup({ cooldown: { failures: 1, window_s: 60, seconds: 30 } });
    const model = ordered(["a", "b"]);
    await s.run(model, { "a/m": fail(500), "b/m": "ok" });
    s.clock.now += 30_000;
    const client = new AbortController();
    const gone = new Error("gone");
    await failure(
      s.run(
        model,
        {
          "a/m": async () => {
            client.abort(gone);
            throw gone;
          },
        },
        client.signal,
      ),
    );
    assert.equal(s.cooldowns.probing("a/m"), false);
    assert.equal((await s.run(model, { "a/m": "a probed", "b/m": "ok" })).answer, "a probed");
  });

  test("when every candidate is cooling down, the one whose cooldown ends first is tried", async () => {
    const s = setup({ cooldown: { failures: 1, window_s: 60, seconds: 30 } });
    const model = ordered(["a", "b"]);
    await s.cooldowns.coolDown("a/m", 20_000, "failures");
    await s.cooldowns.coolDown("b/m", 10_000, "failures");
    const { answer } = await s.run(model, { "a/m": "from a", "b/m": "from b" });
    assert.equal(answer, "from b");
    assert.deepEqual(s.calls, ["b/m"], "one try, not a failure without trying");
    assert.equal(s.cooldowns.get("b/m"), undefined, "it answered: it is back");
  });

  test("a stream's attempt is in flight until it ends; a failure after its first chunk counts against it", async () => {
    const s = setup({ cooldown: { failures: 1, window_s: 60, seconds: 30 } });
    const route = s.router.route(ordered(["a", "b"]), new AbortController().signal);
    let end: (err?: unknown) => void = () => {};
    await route.open(base(route.signal), async (attempt) => {
      end = attempt.continues();
      return "first chunk";
    });
    assert.equal(s.traffic.inFlight("a/m"), 1, "the stream goes on");
    end(new UpstreamError("network", "the upstream stream broke off"));
    assert.equal(s.traffic.inFlight("a/m"), 0);
    assert.equal(route.attempts[0]!.outcome, "ok", "the attempt answered; the call's status tells the rest");
    await new Promise((r) => setImmediate(r));
    assert.equal(s.cooldowns.get("a/m")?.reason, "failures");
    route.end();
    assert.equal(s.traffic.inFlight("a/m"), 0, "ended once");
  });

  test("route.end() ends an attempt whose stream was never read to its end", async () => {
    const s = setup();
    const route = s.router.route(ordered(["a"]), new AbortController().signal);
    await route.open(base(route.signal), async (attempt) => {
      attempt.continues();
      return "first chunk";
    });
    assert.equal(s.traffic.inFlight("a/m"), 1);
    route.end();
    assert.equal(s.traffic.inFlight("a/m"), 0);
  });
});

describe("upstream rate limits", () => {
  test("a 429 moves the call on and cools the deployment down for its retry-after", async () => {
    const s = setup();
    const { answer } = await s.run(ordered(["a", "b"]), { "a/m": fail(429, 7_000), "b/m": "from b" });
    assert.equal(answer, "from b");
    assert.deepEqual(s.cooldowns.get("a/m"), { until: s.clock.now + 7_000, reason: "rate_limited" });
    const without = setup({ cooldown: { seconds: 12 } });
    await without.run(ordered(["a", "b"]), { "a/m": fail(529), "b/m": "ok" });
    assert.deepEqual(without.cooldowns.get("a/m"), {
      until: without.clock.now + 12_000,
      reason: "rate_limited",
    });
  });

  test("every attempt rate-limited: 429 upstream_rate_limited with the shortest wait", async () => {
    const s = setup();
    const err = await failure(
      s.run(ordered(["a", "b"]), { "a/m": fail(429, 9_000), "b/m": fail(429, 4_500) }),
    );
    assert.ok(err instanceof GatewayError);
    assert.equal(err.status, 429);
    assert.equal(err.code, "upstream_rate_limited");
    assert.deepEqual(err.headers, { "retry-after": "5", "retry-after-ms": "4500" });
    // Both cooling for a rate limit: the one free first is still tried, not refused untried.
    s.calls.length = 0;
    s.clock.now += 1_000;
    const again = await failure(s.run(ordered(["a", "b"]), { "a/m": "a", "b/m": fail(429, 2_000) }));
    assert.deepEqual(s.calls, ["b/m"]);
    assert.ok(again instanceof GatewayError);
    assert.equal(again.headers?.["retry-after-ms"], "2000");
  });

  test("a rate limit and another failure: the other failure is the answer", async () => {
    const s = setup();
    const other = fail(502);
    assert.equal(await failure(s.run(ordered(["a", "b"]), { "a/m": other, "b/m": fail(429) })), other);
  });
});

describe("strategies", () => {
  test("weighted: the split follows the weights", async () => {
    let seed = 1;
    const random = () => {
      seed = (seed * 16807) % 2147483647;
      return seed / 2147483647;
    };
    const s = setup({}, { random });
    const model = testModel({ id: "m" }, [
      { providerId: "a", weight: 3 },
      { providerId: "b", weight: 1 },
    ]);
    for (let i = 0; i < 4000; i++) await s.run(model, { "a/m": "a", "b/m": "b" });
    const a = s.calls.filter((c) => c === "a/m").length;
    assert.ok(Math.abs(a / 4000 - 0.75) < 0.03, `a took ${a} of 4000`);
  });

  test("least-busy: the fewest calls in flight; latency: the lowest average, an unmeasured one first", async () => {
    const s = setup();
    const busy = testModel({ id: "m", routing: "least-busy" }, deployments("a", "b", "c"));
    s.traffic.started("a/m");
    s.traffic.started("b/m");
    s.traffic.started("b/m");
    s.traffic.started("c/m");
    s.traffic.started("c/m");
    s.traffic.started("c/m");
    await s.run(busy, { "a/m": "a" });
    assert.deepEqual(s.calls, ["a/m"]);

    const fast = testModel({ id: "m", routing: "latency" }, deployments("a", "b", "c"));
    s.calls.length = 0;
    s.traffic.answered("a/m", 300);
    s.traffic.answered("b/m", 20);
    await s.run(fast, { "c/m": "c" });
    assert.deepEqual(s.calls, ["c/m"], "never measured: tried first");
    s.traffic.answered("c/m", 900);
    s.calls.length = 0;
    await s.run(fast, { "b/m": "b" });
    assert.deepEqual(s.calls, ["b/m"]);
  });
});

describe("metrics", () => {
  test("attempts by deployment and outcome", async () => {
    const s = setup();
    await s.run(ordered(["a", "b"]), { "a/m": fail(500), "b/m": "ok" });
    const values = (await s.metrics.deploymentAttempts.get()).values.map(
      (v) => `${v.labels.deployment} ${v.labels.outcome} ${v.value}`,
    );
    assert.deepEqual(values.sort(), ["a/m server_error 1", "b/m ok 1"]);
  });
});
