import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { GatewayError } from "../errors/index.ts";
import { WithheldLimiter } from "./withheld-limiter.ts";

/** The limiter on a clock the test moves. */
function limiter(max: number, windowMs: number) {
  let now = 1_000_000;
  const l = new WithheldLimiter({ max, window_ms: windowMs }, () => now);
  return { l, advance: (ms: number) => (now += ms) };
}

const refusal = (fn: () => void): GatewayError => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof GatewayError);
    return err;
  }
  assert.fail("the key should be refused");
};

describe("WithheldLimiter", () => {
  test("a key is refused once it has `max` withheld answers within the window, until the oldest leaves it", () => {
    const { l, advance } = limiter(3, 60_000);
    for (let i = 0; i < 3; i++) {
      l.check("k1");
      l.note("k1");
      advance(10_000);
    }
    // now 30 s after the first of three
    const err = refusal(() => l.check("k1"));
    assert.equal(err.status, 429);
    assert.equal(err.code, "withheld_repeats");
    assert.equal(err.headers?.["x-should-retry"], "false", "a retry of the same cannot succeed");
    assert.equal(err.headers?.["retry-after"], "30", "until the oldest leaves the window");
    assert.match(err.message, /withheld by the gateway's content policy 3 times in the last 60 s/);
    l.check("k2"); // other keys are not concerned
    advance(30_000);
    l.check("k1"); // the oldest left the window
  });

  test("answers withheld longer ago than the window do not count; max 0 turns it off", () => {
    const { l, advance } = limiter(2, 1_000);
    l.note("k");
    advance(1_500);
    l.note("k");
    l.check("k");
    const off = limiter(0, 1_000).l;
    for (let i = 0; i < 10; i++) off.note("k");
    off.check("k");
  });
});
