import assert from "node:assert/strict";
import { test } from "node:test";
import { LOGIN_LIMITS, LoginLimiter } from "./login-limiter.ts";

const WINDOW = LOGIN_LIMITS.windowMs;

test("5 failures for one e-mail block it until the oldest leaves the 15-minute window", () => {
  const limiter = new LoginLimiter();
  const t0 = 1_000_000;
  for (let i = 0; i < 5; i++) {
    assert.equal(limiter.retryAfterMs("a@x", "10.0.0.1", t0 + i * 1000), 0, `attempt ${i + 1} is allowed`);
    limiter.fail("a@x", "10.0.0.1", t0 + i * 1000);
  }
  assert.equal(limiter.retryAfterMs("a@x", "10.0.0.1", t0 + 5000), WINDOW - 5000);
  // the same e-mail from another address is blocked too; another e-mail is not
  assert.ok(limiter.retryAfterMs("a@x", "10.0.0.2", t0 + 5000) > 0);
  assert.equal(limiter.retryAfterMs("b@x", "10.0.0.1", t0 + 5000), 0);
  // once the first failure is older than the window, one more attempt is allowed
  assert.equal(limiter.retryAfterMs("a@x", "10.0.0.1", t0 + WINDOW), 0);
});

test("20 failures from one address block every e-mail from it", () => {
  const limiter = new LoginLimiter();
  for (let i = 0; i < 20; i++) limiter.fail(`user${i}@x`, "10.0.0.9", 5000 + i);
  assert.ok(limiter.retryAfterMs("new@x", "10.0.0.9", 6000) > 0);
  assert.equal(limiter.retryAfterMs("new@x", "10.0.0.8", 6000), 0);
});

test("a successful login clears the e-mail's failures but not the address's", () => {
  const limiter = new LoginLimiter({ perEmail: 2, perAddress: 3, windowMs: WINDOW });
  limiter.fail("a@x", "ip", 1);
  limiter.fail("a@x", "ip", 2);
  assert.ok(limiter.retryAfterMs("a@x", "other", 3) > 0);
  limiter.succeed("a@x");
  assert.equal(limiter.retryAfterMs("a@x", "other", 3), 0);
  limiter.fail("b@x", "ip", 4);
  assert.ok(limiter.retryAfterMs("c@x", "ip", 5) > 0, "the address still counts its 3 failures");
});
