import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatReset, RateLimiter, type RateSubject, rateHeaders } from "./rate-limiter.ts";

function clock() {
  let t = 1_000_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

const key = (rpm?: number, tpm?: number): RateSubject => ({ id: "key:k1", rpm, tpm });
const account = (rpm?: number, tpm?: number): RateSubject => ({ id: "account:a1", rpm, tpm });

describe("RateLimiter", () => {
  it("admits rpm requests a minute, then refuses with the time until one is back", () => {
    const c = clock();
    const rl = new RateLimiter(c.now);
    for (let i = 0; i < 3; i++) assert.ok(rl.admit([key(3)], 10).ok);
    const refused = rl.admit([key(3)], 10);
    assert.ok(!refused.ok);
    assert.equal(refused.kind, "requests");
    assert.equal(refused.retryAfterMs, 20_000, "one request refills in a third of a minute");
    c.advance(20_000);
    assert.ok(rl.admit([key(3)], 10).ok);
  });

  it("takes the estimate from the token bucket and gives back what was not used", () => {
    const c = clock();
    const rl = new RateLimiter(c.now);
    const a = rl.admit([key(undefined, 1000)], 800);
    assert.ok(a.ok);
    assert.equal(a.state.tokens!.remaining, 200);
    assert.ok(!rl.admit([key(undefined, 1000)], 300).ok, "300 do not fit in 200");
    rl.settle(a.ticket, 100);
    assert.equal(rl.peek([key(undefined, 1000)]).tokens!.remaining, 900);
    assert.ok(rl.admit([key(undefined, 1000)], 300).ok);
  });

  it("needs room in every bucket: a key's and its account's", () => {
    const rl = new RateLimiter(clock().now);
    assert.ok(rl.admit([key(10), account(1)], 1).ok);
    const refused = rl.admit([key(10), account(1)], 1);
    assert.ok(!refused.ok);
    // a refusal takes nothing: the key's bucket still has 9
    assert.equal(rl.peek([key(10)]).requests!.remaining, 9);
  });

  it("lets a request larger than the whole bucket through when the bucket is full", () => {
    const rl = new RateLimiter(clock().now);
    assert.ok(rl.admit([key(undefined, 100)], 500).ok);
    assert.ok(!rl.admit([key(undefined, 100)], 1).ok, "and then the bucket is in debt");
  });

  it("reports the tighter window of each kind, and nothing without limits", () => {
    const rl = new RateLimiter(clock().now);
    rl.admit([key(100, 1000), account(5, 50_000)], 10);
    const state = rl.peek([key(100, 1000), account(5, 50_000)]);
    assert.equal(state.requests!.limit, 5);
    assert.equal(state.requests!.remaining, 4);
    assert.equal(state.tokens!.limit, 1000);
    assert.deepEqual(rl.peek([key(), account()]), {});
  });

  it("applies a changed limit from then on", () => {
    const rl = new RateLimiter(clock().now);
    rl.admit([key(10)], 1);
    assert.equal(rl.peek([key(2)]).requests!.remaining, 2, "the level is capped to the new size");
  });
});

describe("rate headers", () => {
  it("formats OpenAI's x-ratelimit headers", () => {
    assert.deepEqual(
      rateHeaders({
        requests: { limit: 60, remaining: 59, resetMs: 1000 },
        tokens: { limit: 1000, remaining: 0, resetMs: 360_000 },
      }),
      {
        "x-ratelimit-limit-requests": "60",
        "x-ratelimit-remaining-requests": "59",
        "x-ratelimit-reset-requests": "1s",
        "x-ratelimit-limit-tokens": "1000",
        "x-ratelimit-remaining-tokens": "0",
        "x-ratelimit-reset-tokens": "6m0s",
      },
    );
    assert.equal(formatReset(120), "120ms");
    assert.equal(formatReset(61_500), "1m2s");
  });
});
